"""Found black-box: after DELETE /api/v1/customers/{id} the payer's email was still in the transaction's
form_data, the session's customer_email, and 6 rows of a database dump (sessions, transactions, webhook
deliveries, events). Personal data is encrypted at rest wherever it is stored, and erasure removes it
everywhere the service keeps it; both checked by searching a dump of every table."""

from __future__ import annotations

import pytest
from django.test import Client

from checkout.models import CheckoutSession, Transaction
from orders.lifecycle import order_advance, order_mark_executed, order_record_deposit, order_transition
from orders.models import Order
from tests.orders.conftest import EMAIL_FIELD, USDC_BASE, poster_link
from tests.test_migrations import everything_stored
from webhooks.models import NotificationEmail, WebhookDelivery, WebhookEvent

pytestmark = pytest.mark.django_db(transaction=True)


def _send_to_a_server_refusing_everyone(email: NotificationEmail) -> NotificationEmail:
    from aiosmtpd.controller import Controller
    from django.test import override_settings

    from tests.webhooks.test_notifications import Refusing, _free_port
    from webhooks import notifications

    port = _free_port()
    controller = Controller(Refusing(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        with override_settings(
            EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
            EMAIL_HOST="127.0.0.1",
            EMAIL_PORT=port,
        ):
            notifications.send(email.id)
    finally:
        controller.stop()
    email.refresh_from_db()
    return email


EMAIL = "ada.payer@example.com"
STREET = "12 Analytical Row"
WALLET = "0x" + "4" * 40


def test_erasing_a_customer_removes_their_personal_data_everywhere(admin_client, organization, tokens):
    admin_client.post("/api/v1/webhooks", {"url": "http://127.0.0.1:9/hooks", "events": ["*"]}, format="json")
    admin_client.patch(
        "/api/v1/notifications",
        {
            "email_enabled": True,
            "email_address": "owner@shop.example",
            "enabled_events": ["payment.completed", "checkout.completed"],
        },
        format="json",
    )
    link = poster_link(admin_client, collect_shipping_address=True, form_schema=EMAIL_FIELD)
    paid = Client().post(
        f"/pay/{link['short_code']}",
        {
            "pay_with": f"8453:{USDC_BASE}",
            "field_email": EMAIL,
            "ship_line1": STREET,
            "ship_city": "London",
        },
    )
    assert paid.status_code == 302, paid.content.decode()
    session = CheckoutSession.objects.get()
    order = Order.objects.get(session_order__session=session)
    order_record_deposit(
        order=order, chain=8453, tx_hash="0x" + "a" * 64, amount=int(order.src_amount), from_address=WALLET
    )
    order_advance(order=order, to_status="sending_token_from_vault")
    order_transition(
        order,
        from_statuses=["sending_token_from_vault"],
        to_status="relay",
        settlement={"dstAmount": order.payload["expectedDstAmount"]},
    )
    assert order_mark_executed(order=order, actual_dst_amount=order.payload["expectedDstAmount"])
    transaction = Transaction.objects.get()
    customer = admin_client.get("/api/v1/customers").json()["data"][0]
    assert customer["email"] == EMAIL and customer["wallet_address"] == WALLET
    assert admin_client.get(f"/api/v1/transactions/{transaction.id}").json()["form_data"] == {"email": EMAIL}
    assert WebhookDelivery.objects.count() == 2 and NotificationEmail.objects.count() == 3
    assert (
        NotificationEmail.objects.get(event_type="receipt.completed").to_address == EMAIL
    )  # the payer's copy
    # The payer's receipt is refused by the mail server, which names the address in its answer: the error
    # column keeps what failed, not the address.
    refused = _send_to_a_server_refusing_everyone(
        NotificationEmail.objects.get(event_type="receipt.completed")
    )
    assert refused.status == "failed" and refused.last_error.startswith("SMTPRecipientsRefused")
    # At rest, nothing holds it in the clear, before erasure too.
    dump = everything_stored()
    assert EMAIL not in dump and STREET not in dump

    assert admin_client.delete(f"/api/v1/customers/{customer['id']}").json()["deleted"] is True

    erased = admin_client.get(f"/api/v1/transactions/{transaction.id}").json()
    assert (erased["form_data"], erased["shipping_address"]) == ({}, None)
    assert (erased["from_address"], erased["amount"], erased["status"]) == (
        WALLET,
        transaction.amount.__str__(),
        "completed",
    )
    api_session = admin_client.get(f"/api/v1/checkout-sessions/{session.id}").json()
    assert api_session["customer_email"] is None and api_session["status"] == "completed"
    kept = [str(e.data) for e in WebhookEvent.objects.all()] + [d.body for d in WebhookDelivery.objects.all()]
    kept += [e.body for e in NotificationEmail.objects.all()] + [
        e.to_address for e in NotificationEmail.objects.all()
    ]
    kept += [e.last_error for e in NotificationEmail.objects.all()]  # the error columns too
    assert all(EMAIL not in text and STREET not in text for text in kept)
    completed = WebhookEvent.objects.get(event_type="payment.completed").data
    assert completed["id"] == transaction.id and completed["sender_address"] == WALLET  # the books stay
    assert completed["form_data"] == {} and completed["checkoutSession"]["customerEmail"] is None
    assert all(
        f'"id":"{transaction.id}"' in d.body
        for d in WebhookDelivery.objects.filter(event_type="payment.completed")
    )
    dump = everything_stored()
    assert EMAIL not in dump and STREET not in dump
