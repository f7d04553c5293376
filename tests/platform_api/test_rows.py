"""The hottest lists render rows read as values: the same output as their serializers give for models."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework import serializers

from audit.models import AuditEvent
from audit.serializers import AuditEventSerializer
from audit.views import EVENT_ROWS
from checkout.link_views import LINK_ROWS
from checkout.models import PaymentLink
from checkout.serializers import PaymentLinkSerializer
from platform_api.models import ApiKey
from platform_api.rows import Rows
from platform_api.serializers import ApiKeySerializer
from platform_api.views import API_KEY_ROWS
from tests.factories import AuditEventFactory, OrganizationFactory, PaymentLinkFactory, make_api_key

pytestmark = pytest.mark.django_db


def test_payment_links_as_values_render_as_their_serializer_does(tokens):
    organization = OrganizationFactory()
    PaymentLinkFactory(organization=organization)  # a fixed price, defaults elsewhere
    PaymentLinkFactory(
        organization=organization,
        amount=None,
        min_amount=1,
        max_amount=2**256 - 1,
        suggested_amount=10**30,
        max_uses=3,
        expires_at=timezone.now() + timedelta(days=2),
        form_schema={"fields": [{"id": "email", "type": "email", "label": "Email", "required": True}]},
        shipping_options=[{"id": "post", "label": "Post", "amount": "5"}],
        branding={"business_name": "Ünïcode & <b>"},
        description="",
        is_active=False,
        fee_on_top=True,
    )
    links = PaymentLink.objects.filter(organization=organization).order_by("created_at", "pk")
    expected = PaymentLinkSerializer(links, many=True).data
    assert LINK_ROWS.render(LINK_ROWS.values(links)) == [dict(row) for row in expected]
    assert expected[1]["max_amount"] == str(2**256 - 1) and expected[1]["amount"] is None


def test_api_keys_as_values_render_as_their_serializer_does():
    organization = OrganizationFactory()
    make_api_key(organization, permissions=("read",), name="reader")
    key, _ = make_api_key(organization, expires_at=timezone.now() + timedelta(days=1))
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now(), is_active=False)
    keys = ApiKey.objects.filter(organization=organization).order_by("created_at", "pk")
    expected = ApiKeySerializer(keys, many=True).data
    assert API_KEY_ROWS.render(API_KEY_ROWS.values(keys)) == [dict(row) for row in expected]
    assert {row["is_active"] for row in expected} == {True, False}


def test_audit_events_as_values_render_as_their_serializer_does():
    organization = OrganizationFactory()
    AuditEventFactory(organization=organization, ip_address="2001:db8::1", status_code=201)
    AuditEventFactory(organization=organization, ip_address=None, actor="member:mem_x", status_code=403)
    events = AuditEvent.objects.filter(organization=organization).order_by("created_at", "pk")
    expected = AuditEventSerializer(events, many=True).data
    assert EVENT_ROWS.render(EVENT_ROWS.values(events)) == [dict(row) for row in expected]
    assert {row["ip_address"] for row in expected} == {"2001:db8::1", None}


def test_a_field_that_is_not_a_plain_column_is_refused_when_the_list_is_declared():
    class Nested(serializers.Serializer):
        name = serializers.CharField(source="organization.name")

    class Method(serializers.Serializer):
        label = serializers.SerializerMethodField()

    with pytest.raises(TypeError, match="plain columns"):
        Rows(Nested)
    with pytest.raises(TypeError, match="needs a computed value"):
        Rows(Method)
