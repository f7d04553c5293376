"""`payment.completed` has one shape, whatever paid it: an order of the order interface, a payment link's
session, or a quick payment (issue 25). Each is driven through its own path to completion."""

import pytest

from checkout import payments
from checkout.models import CheckoutSession
from orders import lifecycle
from orders.models import Order
from quickpay.models import QuickPayment
from tests.orders.conftest import order_body
from webhooks.models import WebhookEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("tokens")]

USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
PAYER = "0x" + "4" * 40


def _executed(order: Order, tx: str) -> dict:
    lifecycle.order_record_deposit(
        order=order,
        chain=order.src_chain,
        tx_hash="0x" + tx * 64,
        amount=int(order.src_amount),
        from_address=PAYER,
    )
    for status in ("sending_token_from_vault", "relay"):
        assert lifecycle.order_advance(order=order, to_status=status)
    assert lifecycle.order_mark_executed(
        order=order, actual_dst_amount=str(order.payload.get("expectedDstAmount", 1))
    )
    event = WebhookEvent.objects.filter(event_type="payment.completed").order_by("-created_at", "-pk").first()
    assert event is not None
    return event.data


def _api_order(admin_client) -> dict:
    response = admin_client.post("/orders", order_body(), format="json")
    return _executed(Order.objects.get(pk=response.json()["data"]["id"]), "a")


def _link_payment(admin_client) -> dict:
    body = {
        "amount": "2500000",
        "token_address": USDC_BASE,
        "chain_id": 8453,
        "recipient_address": "0x" + "1" * 40,
        "client_reference_id": "cart-9",
    }
    session = CheckoutSession.objects.get(
        pk=admin_client.post("/api/v1/checkout-sessions", body, format="json").json()["id"]
    )
    order = payments.session_order_create(
        session=session, src_chain=8453, src_token=USDC_BASE, payer_ip="1.2.3.4"
    )
    return _executed(order, "b")


def _quick_payment(admin_client) -> dict:
    from chains.handlers import outbox_finished
    from chains.models import Deposit
    from chains.watcher import handle_deposit
    from tests.factories import OutboxTxFactory

    body = {
        "amount": "2500000",
        "token_address": USDC_BASE,
        "chain_id": 8453,
        "recipient_address": "0x" + "1" * 40,
    }
    payment = QuickPayment.objects.get(
        pk=admin_client.post("/api/v1/quick-pay", body, format="json").json()["id"]
    )
    deposit = Deposit.objects.create(
        chain_id=8453,
        tx_hash="0x" + "c" * 64,
        log_index=0,
        block_number=101,
        block_hash="0x" + "d" * 64,
        from_address=PAYER,
        to_address=payment.deposit_address,
        token=USDC_BASE,
        amount="2500000",
        owner=f"quick_payment:{payment.id}",
    )
    assert handle_deposit(deposit)
    payout = OutboxTxFactory(key=f"quickpay:{payment.id}:payout", status="mined", tx_hash="0x" + "e" * 64)
    outbox_finished(payout)  # told once the recipient has the money, as every kind of payment
    return WebhookEvent.objects.filter(event_type="payment.completed").order_by("-created_at", "-pk")[0].data


def _shape(data: dict) -> dict:
    """Each field's name and JSON type (None allowed for the nullable ones)."""
    return {
        key: (_shape(value) if isinstance(value, dict) and key == "checkoutSession" else type(value).__name__)
        for key, value in data.items()
    }


def test_every_kind_of_payment_is_told_in_the_same_shape(admin_client):
    api, link, quick = _api_order(admin_client), _link_payment(admin_client), _quick_payment(admin_client)

    contract = {
        "id",
        "payment_link_id",
        "amount",
        "token_address",
        "chain_id",
        "sender_address",
        "recipient_address",
        "tx_hash",
        "status",
        "form_data",
        "discount_code",
        "created_at",
        "completed_at",
        "checkoutSession",
    }
    assert contract <= set(api) and set(api) == set(link) == set(quick)
    assert (
        set(api["checkoutSession"])
        == set(link["checkoutSession"])
        == set(quick["checkoutSession"])
        == {"id", "clientReferenceId", "metadata", "customerEmail", "customerName"}
    )
    for data in (api, link, quick):  # one time format: milliseconds since the epoch
        assert isinstance(data["created_at"], int) and isinstance(data["completed_at"], int)
        assert data["completed_at"] >= data["created_at"] > 1_600_000_000_000
        assert (data["sender_address"], type(data["amount"]), type(data["chain_id"])) == (PAYER, str, int)
    assert api["id"] == api["order_id"]
    assert link["id"].startswith("txn_") and link["checkoutSession"]["id"].startswith("cs_")
    assert link["checkoutSession"]["clientReferenceId"] == "cart-9"
    assert quick["id"].startswith("qp_") and quick["order_id"] is None


def _interface_session_completed(admin_client) -> dict:
    """A session made on the order interface, paid by an order that names it, to `checkout.completed`."""
    session_id = admin_client.post(
        "/checkout-sessions", {"client_reference_id": "cart-1"}, format="json"
    ).json()["data"]["id"]
    response = admin_client.post("/orders", order_body(checkoutSessionId=session_id), format="json")
    _executed(Order.objects.get(pk=response.json()["data"]["id"]), "f")
    return WebhookEvent.objects.get(event_type="checkout.completed", subject=session_id).data


def _link_session_completed(admin_client) -> dict:
    _link_payment(admin_client)
    return WebhookEvent.objects.filter(event_type="checkout.completed").order_by("-created_at", "-pk")[0].data


def test_checkout_completed_has_one_body_whichever_interface_made_the_session(admin_client):
    interface, platform = _interface_session_completed(admin_client), _link_session_completed(admin_client)

    assert set(interface) == set(platform)
    assert set(interface["session"]) == set(platform["session"])
    assert set(interface["checkoutSession"]) == set(platform["checkoutSession"])
    assert interface["session"]["status"] == platform["session"]["status"] == "completed"
    assert interface["session"]["object"] == "checkout_session"
    assert interface["session"]["client_reference_id"] == interface["checkoutSession"]["clientReferenceId"]
    assert interface["session"]["url"] is None and platform["session"]["url"].endswith(
        platform["session"]["id"]
    )
    assert interface["order_id"] == interface["id"]
    for data in (interface, platform):
        assert isinstance(data["session"]["created_at"], int) and isinstance(data["completed_at"], int)


def test_checkout_expired_has_one_body_whichever_interface_made_the_session(admin_client):
    interface_id = admin_client.post("/checkout-sessions", {}, format="json").json()["data"]["id"]
    assert admin_client.post(f"/checkout-sessions/{interface_id}/expire").status_code == 200
    body = {"amount": "2500000", "token_address": USDC_BASE, "chain_id": 8453, "recipient_address": PAYER}
    platform_id = admin_client.post("/api/v1/checkout-sessions", body, format="json").json()["id"]
    assert admin_client.post(f"/api/v1/checkout-sessions/{platform_id}/expire").status_code == 200

    interface = WebhookEvent.objects.get(event_type="checkout.expired", subject=interface_id).data
    platform = WebhookEvent.objects.get(event_type="checkout.expired", subject=platform_id).data
    assert set(interface) == set(platform)
    assert (interface["reason"], platform["reason"]) == ("expired_by_request", "expired_by_merchant")
    assert interface["status"] == platform["status"] == "expired"
    assert (interface["id"], interface["checkoutSession"]["id"]) == (interface_id, interface_id)
