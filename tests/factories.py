"""factory_boy factories. API keys go through the service so digests are real."""

from __future__ import annotations

import factory
from django.utils import timezone

from audit.models import AuditEvent
from platform_api.models import Organization
from platform_api.services import api_key_create


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"org-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    contact_email = factory.LazyAttribute(lambda o: f"ops@{o.slug}.example")


def make_api_key(organization=None, *, permissions=("admin",), name="test key", expires_at=None):
    """Create a key through the service; returns (ApiKey, raw key)."""
    return api_key_create(
        organization=organization or OrganizationFactory(),
        name=name,
        permissions=list(permissions),
        expires_at=expires_at,
    )


class AuditEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AuditEvent

    organization = factory.SubFactory(OrganizationFactory)
    event_type = "api_key.created"
    resource_type = "api_key"
    resource_id = factory.Sequence(lambda n: f"ak_{n:024d}")
    ip_address = "203.0.113.7"
    request_method = "POST"
    request_path = "/api/v1/api-keys"
    status_code = 201
    created_at = factory.LazyFunction(timezone.now)
