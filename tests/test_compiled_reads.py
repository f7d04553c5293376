"""Reads compiled once (core.compiled) return what the ORM returns: every field of the instance and of the
related ones, decrypted and converted alike, from any thread, and a change as soon as it is committed."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import close_old_connections
from django.test import Client

from checkout import hosted, payments, selectors
from checkout.models import CheckoutSession, PaymentLink
from core.compiled import CompiledRead
from orders.models import Order
from tests.orders.conftest import USDC_BASE, poster_link

pytestmark = pytest.mark.django_db(transaction=True)


def _fields(instance) -> dict:
    """Every concrete field's value, as the instance holds it (loaded fields only)."""
    deferred = instance.get_deferred_fields()
    return {
        field.attname: getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
        if field.attname not in deferred
    }


@pytest.fixture
def paid_session(admin_client, tokens):
    """A session of a link with items, a form and shipping, started on the hosted page: its order waiting."""
    link = poster_link(
        admin_client,
        amount=None,
        items=[{"name": "Poster", "amount": "4000000", "quantity": 1}],
        form_schema={"fields": [{"id": "email", "type": "email", "label": "Email", "required": True}]},
        shipping_options=[{"id": "post", "name": "Post", "amount": "1000000"}],
    )
    started = Client().post(
        f"/pay/{link['short_code']}?client_reference_id=cart-9&metadata[k]=v",
        {
            "amount": "4",
            "field_email": "ada@payer.example",
            "shipping_option": "post",
            "pay_with": f"8453:{USDC_BASE}",
        },
    )
    assert started.status_code == 302, started.content.decode()[:2000]
    return CheckoutSession.objects.get()


def test_each_payer_read_equals_the_orms(paid_session):
    session = paid_session
    link = PaymentLink.objects.select_related("organization").get(pk=session.payment_link_id)
    compiled_link = selectors.payment_link_by_code(link.short_code)
    assert _fields(compiled_link) == _fields(link)
    assert _fields(compiled_link.organization) == _fields(link.organization)
    assert compiled_link._state.db == "default" and not compiled_link._state.adding

    orm = CheckoutSession.objects.select_related("payment_link", "organization").get(pk=session.pk)
    compiled = hosted._session_with_link.first(session.pk)
    assert _fields(compiled) == _fields(orm)
    # Encrypted and JSON fields come back decrypted and decoded, as the ORM gives them.
    assert compiled.form_data == {"email": "ada@payer.example"} and compiled.metadata == {"k": "v"}
    assert compiled.customer_email == "ada@payer.example"
    assert _fields(compiled.payment_link) == _fields(orm.payment_link)
    assert _fields(compiled.organization) == _fields(orm.organization)

    order = Order.objects.get(session_order__session=session)
    assert _fields(payments.session_current_order(session)) == _fields(order)
    status = payments._latest_order_status.first(session.pk)
    assert set(_fields(status)) == {f for f in payments.STATUS_FIELDS if f != "id"} | {"id"}
    assert {name: value for name, value in _fields(order).items() if name in _fields(status)} == _fields(
        status
    )

    assert payments.session_status_data(session) == payments.session_status_data(session, order)
    assert hosted._session_with_link.first("cs_" + "x" * 24) is None


def test_a_session_without_a_link_has_none_and_a_change_is_read_at_once(paid_session):
    CheckoutSession.objects.filter(pk=paid_session.pk).update(payment_link=None, status="expired")
    compiled = hosted._session_with_link.first(paid_session.pk)
    assert compiled.payment_link is None and compiled.status == "expired"
    assert hosted._session_alone.first(paid_session.pk).status == "expired"


def test_rows_come_in_the_querysets_order_from_any_thread(paid_session):
    read = CompiledRead(
        lambda session_id: Order.objects.filter(session_order__session_id=session_id).order_by("-created_at")
    )
    first = Order.objects.get()
    payments.session_order_create(
        session=paid_session, src_chain=8453, src_token=USDC_BASE, payer_ip="127.0.0.1"
    )  # another token: the first order expires, a second one waits
    assert [o.pk for o in read.all(paid_session.pk)] == list(
        Order.objects.filter(session_order__session=paid_session)
        .order_by("-created_at")
        .values_list("pk", flat=True)
    )
    assert read.all(paid_session.pk)[-1].pk == first.pk and read.all(paid_session.pk)[-1].status == "expired"

    seen = []

    def other_thread():
        try:
            seen.append(_fields(read.first(paid_session.pk)))
        finally:
            close_old_connections()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [_fields(read.first(paid_session.pk))]


def test_a_read_whose_value_the_orm_converts_is_refused():
    read = CompiledRead(lambda order_id: Order.objects.filter(pk=order_id))  # a UUID: not passed as given
    with pytest.raises(ImproperlyConfigured):
        read.first("anything")
    with pytest.raises(TypeError):
        hosted._session_alone.first(42)


def test_a_widgets_page_read_equals_the_orms(admin_client, tokens):
    from checkout import widget_page
    from checkout.models import Widget

    created = admin_client.post(
        "/api/v1/widgets",
        {
            "name": "Buy",
            "widget_type": "checkout",
            "config": {
                "destination_chain_id": 8453,
                "destination_token": USDC_BASE,
                "recipient_address": "0x" + "1" * 40,
                "amount": "1000000",
            },
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    widget = Widget.objects.select_related("organization").get()
    compiled = widget_page._widget_by_code.first(widget.short_code)
    assert _fields(compiled) == _fields(widget) and _fields(compiled.organization) == _fields(
        widget.organization
    )
    assert widget_page._widget_by_code.first("nOtThErE") is None
