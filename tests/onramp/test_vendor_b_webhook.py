"""vendorB's payment-intent webhook: signed, once per event, moving a card order on; card refunds through the
vendor, against a local fake of its API."""

import hashlib
import hmac
import json
import time
from datetime import timedelta
from urllib.parse import parse_qs

import pytest
from django.utils import timezone
from werkzeug import Response

from onramp.models import VendorBEvent
from orders.lifecycle import orders_expire_unpaid
from orders.models import DepositTx, Order
from orders.settlement import settle_order
from tests.orders.conftest import order_body

pytestmark = pytest.mark.django_db

SECRET = "whsec_vendor_b_test"
CARD = {
    "vendor": "vendorB-web2",
    "paymentMethod": "card",
    "country": "US",
    "redirectUrl": "https://shop.example/r",
}


@pytest.fixture
def vendor_b(httpserver, settings):
    settings.VENDOR_B_API_URL = httpserver.url_for("/vb")
    settings.VENDOR_B_SECRET_KEY = "sk_test_local"
    settings.VENDOR_B_WEBHOOK_SECRET = SECRET
    httpserver.expect_request("/vb/v1/payment_intents", method="POST").respond_with_json({"id": "pi_card1"})
    return httpserver


@pytest.fixture
def card_order(api_client, tokens, vendor_b):
    response = api_client.post("/orders", order_body(onramp=CARD), format="json")
    assert response.status_code == 200, response.json()
    return Order.objects.get(pk=response.json()["data"]["id"])


def signed(event: dict, *, secret=SECRET, at=None) -> tuple[bytes, str]:
    body = json.dumps(event).encode()
    timestamp = int(at if at is not None else time.time())
    signature = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return body, f"t={timestamp},v1={signature}"


def succeeded(intent="pi_card1", event_id="evt_1"):
    return {
        "id": event_id,
        "type": "payment_intent.succeeded",
        "data": {"object": {"id": intent, "object": "payment_intent", "status": "succeeded"}},
    }


def post(api_client, body, signature):
    return api_client.generic(
        "POST",
        "/onramp/vendorB/webhook",
        body,
        content_type="application/json",
        HTTP_VENDORB_SIGNATURE=signature,
    )


def test_a_succeeded_payment_intent_moves_the_card_order_on_once(api_client, card_order, settings):
    assert card_order.status == "waiting_stripe_payment"
    body, signature = signed(succeeded())

    first = post(api_client, body, signature)
    replay = post(api_client, body, signature)

    assert (first.status_code, first.json()["data"]) == (200, {"result": "card payment recorded"})
    assert replay.json()["data"] == {"result": "already handled"}
    card_order.refresh_from_db()
    assert card_order.status == "quoting_after_deposit"
    deposit = card_order.deposit_txs.get()
    assert (deposit.tx_hash, deposit.from_address, int(deposit.amount)) == (
        "pi_card1",
        settings.VAULT_ADDRESS,
        int(card_order.src_amount),
    )
    # A second event for the same intent (the vendor may send one) records nothing more.
    post(api_client, *signed(succeeded(event_id="evt_2")))
    assert DepositTx.objects.count() == 1


@pytest.mark.parametrize(
    "tamper",
    [
        lambda body, sig: (body, sig.replace("v1=", "v1=0")),  # a signature that does not match
        lambda body, sig: (body + b" ", sig),  # a body changed in transit
        lambda body, sig: signed(json.loads(body), secret="whsec_other"),  # another secret
        lambda body, sig: signed(json.loads(body), at=time.time() - 3600),  # a delivery captured an hour ago
        lambda body, sig: (body, ""),  # no signature
        lambda body, sig: (body, "t=abc,v1=00"),  # a malformed one
    ],
)
def test_a_webhook_that_is_not_vendor_bs_or_not_now_is_400_and_changes_nothing(
    api_client, card_order, tamper
):
    body, signature = tamper(*signed(succeeded()))

    response = post(api_client, body, signature)

    assert response.status_code == 400
    assert response.json()["success"] is False and "vendorB webhook refused" in response.json()["message"]
    card_order.refresh_from_db()
    assert card_order.status == "waiting_stripe_payment"
    assert not VendorBEvent.objects.exists() and not DepositTx.objects.exists()


def test_other_events_are_acknowledged_and_ignored(api_client, card_order):
    failed = {"id": "evt_9", "type": "payment_intent.payment_failed", "data": {"object": {"id": "pi_card1"}}}
    assert post(api_client, *signed(failed)).json()["data"] == {"result": "ignored"}
    card_order.refresh_from_db()
    assert card_order.status == "waiting_stripe_payment"


def _refunds(vendor_b):
    forms = []

    def handler(request):
        forms.append((request.headers["Idempotency-Key"], parse_qs(request.get_data(as_text=True))))
        return Response(json.dumps({"id": "re_card1", "object": "refund"}), content_type="application/json")

    vendor_b.expect_request("/vb/v1/refunds", method="POST").respond_with_handler(handler)
    return forms


def test_a_card_order_that_fails_is_refunded_to_the_card(api_client, card_order, vendor_b):
    forms = _refunds(vendor_b)
    post(api_client, *signed(succeeded()))

    # The devnet solver cannot deliver from Base: the order fails before anything is swept.
    assert settle_order(card_order.pk) == "refunded"

    card_order.refresh_from_db()
    assert card_order.error_details.startswith("RELAY_UNAVAILABLE")
    refund = card_order.refund_txs.get()
    assert (refund.tx_hash, refund.status, int(refund.amount)) == (
        "re_card1",
        "success",
        int(card_order.src_amount),
    )
    assert forms == [
        (
            f"refund-{card_order.pk}",
            {"payment_intent": ["pi_card1"], "metadata[order_id]": [str(card_order.pk)]},
        )
    ]
    assert settle_order(card_order.pk) == "refunded" and len(forms) == 1  # nothing refunded twice


def test_an_unpaid_card_order_expires_and_a_late_payment_goes_back_to_the_card(
    api_client, card_order, vendor_b
):
    forms = _refunds(vendor_b)
    assert orders_expire_unpaid(now=timezone.now() + timedelta(hours=1)) == 1
    card_order.refresh_from_db()
    assert card_order.status == "expired"

    post(api_client, *signed(succeeded()))
    assert settle_order(card_order.pk) == "refunded"

    assert card_order.deposit_txs.get().refund_reason == "late"
    assert len(forms) == 1
