from datetime import timedelta

import pytest
from django.utils import timezone

from chains.evm import is_address
from chains.families import deposit_address
from chains.handlers import outbox_finished
from chains.models import WatchedAddress
from quickpay.models import QuickPayment
from quickpay.services import quick_payments_expire
from quickpay.tasks import expire_quick_payments
from tests.factories import OutboxTxFactory, make_api_key

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("tokens")]

VALID = {
    "amount": "2500000",
    "token_address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    "chain_id": 8453,
    "recipient_address": "0x1111111111111111111111111111111111111111",
}


def _post(client, body, ip="203.0.113.50", **headers):
    return client.post("/api/v1/quick-pay", body, format="json", REMOTE_ADDR=ip, **headers)


def test_creates_a_payment_with_its_own_deposit_address(api_client):
    response = _post(api_client, VALID)

    assert response.status_code == 201
    body = response.json()
    payment = QuickPayment.objects.get(pk=body["id"])
    assert body == {
        "object": "quick_payment",
        "id": payment.id,
        "status": "awaiting_payment",
        "amount": "2500000",
        "token_address": VALID["token_address"],
        "chain_id": 8453,
        "recipient_address": VALID["recipient_address"],
        "deposit_address": deposit_address(
            chain_id=8453, kind="quick_payment", identifier=payment.id, field="chain_id"
        ),
        "amount_received": "0",
        "expires_at": int(payment.expires_at.timestamp() * 1000),
        "paid_at": None,
        "tx_hash": None,
        "created_at": int(payment.created_at.timestamp() * 1000),
    }
    assert body["id"].startswith("qp_")
    assert is_address(body["deposit_address"])
    assert body["expires_at"] - body["created_at"] == 15 * 60 * 1000
    assert payment.organization is None
    watched = WatchedAddress.objects.get(chain_id=8453, address=body["deposit_address"])
    assert watched.owner == f"quick_payment:{payment.id}"
    assert watched.watch_until == payment.expires_at + timedelta(days=1)


def test_the_token_is_the_registrys_whatever_the_case_it_was_sent_in(api_client):
    response = _post(api_client, {**VALID, "token_address": VALID["token_address"].lower()})
    assert response.status_code == 201
    assert response.json()["token_address"] == VALID["token_address"]


def test_anyone_with_the_id_reads_its_status_and_nobody_guesses_one(api_client):
    created = _post(api_client, VALID).json()

    response = api_client.get(f"/api/v1/quick-pay/{created['id']}", REMOTE_ADDR="198.51.100.7")

    assert response.status_code == 200
    assert response.json() == created
    missing = api_client.get("/api/v1/quick-pay/qp_doesnotexist", REMOTE_ADDR="198.51.100.7")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "resource_not_found"


def test_each_payment_gets_a_different_deposit_address(api_client):
    first = _post(api_client, VALID).json()["deposit_address"]
    second = _post(api_client, VALID).json()["deposit_address"]
    assert first != second


def test_a_key_makes_the_payment_its_organizations(api_client, organization):
    _, raw = make_api_key(organization, permissions=["write"])
    response = _post(api_client, VALID, ip="203.0.113.51", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 201
    assert QuickPayment.objects.get(pk=response.json()["id"]).organization == organization


def test_a_key_sent_must_be_valid_and_may_write(api_client, organization):
    _, read_only = make_api_key(organization, permissions=["read"])
    for header, status, code in [
        ("Bearer svc_live_bogus", 401, "key_invalid"),
        (f"Bearer {read_only}", 403, "insufficient_permissions"),
    ]:
        response = _post(api_client, VALID, ip="203.0.113.52", HTTP_AUTHORIZATION=header)
        assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert not QuickPayment.objects.exists()


@pytest.mark.parametrize(
    ("change", "code", "param"),
    [
        ({"amount": None}, "missing_required_field", "amount"),
        ({"token_address": None}, "missing_required_field", "token_address"),
        ({"chain_id": None}, "missing_required_field", "chain_id"),
        ({"recipient_address": None}, "missing_required_field", "recipient_address"),
        ({"amount": "0"}, "invalid_field_value", "amount"),
        ({"amount": "1.5"}, "invalid_field_value", "amount"),
        ({"amount": "-1"}, "invalid_field_value", "amount"),
        ({"amount": 1000}, "invalid_field_value", "amount"),
        ({"amount": "1" * 80}, "invalid_field_value", "amount"),
        ({"token_address": "0x833589"}, "invalid_address", "token_address"),
        (
            {"recipient_address": "1111111111111111111111111111111111111111"},
            "invalid_address",
            "recipient_address",
        ),
        ({"recipient_address": "0x" + "g" * 40}, "invalid_address", "recipient_address"),
        ({"chain_id": "8453"}, "invalid_field_value", "chain_id"),
        ({"chain_id": 0}, "invalid_field_value", "chain_id"),
        ({"chain_id": 999999}, "invalid_field_value", "chain_id"),
        ({"chain_id": True}, "invalid_field_value", "chain_id"),
        ({"token_address": "0x" + "12" * 20}, "invalid_field_value", "token_address"),
        ({"chain_id": 1}, "invalid_field_value", "token_address"),  # USDC of Base is not a token of chain 1
    ],
)
def test_bad_input_is_400_naming_the_field_and_stores_nothing(api_client, change, code, param):
    body = {**VALID, **change}
    body = {k: v for k, v in body.items() if v is not None}

    response = _post(api_client, body, ip="203.0.113.60")

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", code, param)
    assert param in error["message"]
    assert not QuickPayment.objects.exists()


def test_no_payment_is_taken_on_a_chain_without_a_deposit_factory(api_client, settings):
    settings.CHAINS = [{**c, "factory_address": ""} if c["chain_id"] == 8453 else c for c in settings.CHAINS]

    response = _post(api_client, VALID, ip="203.0.113.61")

    assert response.status_code == 400
    assert (response.json()["error"]["param"], response.json()["error"]["code"]) == (
        "chain_id",
        "invalid_field_value",
    )
    assert not QuickPayment.objects.exists() and not WatchedAddress.objects.exists()


def test_expiry_marks_only_unpaid_payments_past_their_time(api_client):
    late = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    fresh = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    paid = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    QuickPayment.objects.filter(pk__in=[late.pk, paid.pk]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    QuickPayment.objects.filter(pk=paid.pk).update(status=QuickPayment.Status.PAID)

    assert expire_quick_payments() == 1
    assert quick_payments_expire() == 0

    statuses = dict(QuickPayment.objects.values_list("pk", "status"))
    assert statuses == {late.pk: "expired", fresh.pk: "awaiting_payment", paid.pk: "paid"}


# --- deposits (handed over by the watcher, as chains.watcher.handle_deposit does) -------------------------

WETH_BASE = "0x4200000000000000000000000000000000000006"


def _deposit(payment, amount, *, token=None, n=1):
    from chains.models import Deposit
    from chains.watcher import handle_deposit

    deposit = Deposit.objects.create(
        chain_id=payment.chain_id,
        tx_hash="0x" + f"{n:064x}",
        log_index=0,
        block_number=100 + n,
        block_hash="0x" + "b" * 64,
        from_address="0x" + "4" * 40,
        to_address=payment.deposit_address,
        token=token or payment.token_address,
        amount=str(amount),
        owner=f"quick_payment:{payment.id}",
    )
    assert handle_deposit(deposit)
    payment.refresh_from_db()
    return deposit


def test_partial_deposits_add_up_until_the_payment_is_paid(api_client):
    payment = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])

    _deposit(payment, 1_000_000, n=1)
    assert (payment.status, payment.amount_received) == ("awaiting_payment", "1000000")
    last = _deposit(payment, 1_500_000, n=2)

    assert (payment.status, payment.amount_received, payment.tx_hash) == ("paid", "2500000", last.tx_hash)
    assert payment.paid_at is not None and payment.payer_address == "0x" + "4" * 40
    body = api_client.get(f"/api/v1/quick-pay/{payment.id}", REMOTE_ADDR="198.51.100.8").json()
    assert (body["status"], body["amount_received"], body["tx_hash"]) == ("paid", "2500000", last.tx_hash)


def test_another_token_or_a_late_deposit_does_not_count(api_client):
    payment = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    _deposit(payment, 10**18, token=WETH_BASE, n=1)
    assert (payment.status, payment.amount_received) == ("awaiting_payment", "0")

    QuickPayment.objects.filter(pk=payment.pk).update(status=QuickPayment.Status.EXPIRED)
    _deposit(payment, 2_500_000, n=2)
    assert (payment.status, payment.amount_received) == ("expired", "0")


def test_an_organizations_payment_tells_its_webhooks_once(api_client, organization):
    from webhooks.models import WebhookEndpoint, WebhookEvent

    WebhookEndpoint.objects.create(organization=organization, url="https://hooks.example.com/x", events=["*"])
    _, raw = make_api_key(organization, permissions=["write"])
    created = _post(api_client, VALID, ip="203.0.113.53", HTTP_AUTHORIZATION=f"Bearer {raw}").json()
    payment = QuickPayment.objects.get(pk=created["id"])

    paying = _deposit(payment, 2_500_000, n=1)
    _deposit(payment, 7, n=2)  # after it was paid: recorded by the watcher, not counted, no second event
    assert not WebhookEvent.objects.exists()  # paid, but the recipient has nothing yet

    payout = OutboxTxFactory(key=f"quickpay:{payment.id}:payout", status="mined", tx_hash="0x" + "e" * 64)
    outbox_finished(payout)
    outbox_finished(payout)  # handed over again (a retry): still one event
    event = WebhookEvent.objects.get()
    assert (event.organization, event.event_type) == (organization, "payment.completed")
    assert event.data == {
        "id": payment.id,
        "payment_link_id": None,
        "order_id": None,
        "amount": "2500000",
        "token_address": VALID["token_address"],
        "chain_id": 8453,
        "sender_address": "0x" + "4" * 40,
        "recipient_address": VALID["recipient_address"],
        "tx_hash": paying.tx_hash,
        "status": "completed",
        "form_data": {},
        "discount_code": None,
        "created_at": int(payment.created_at.timestamp() * 1000),
        "completed_at": int(payment.paid_at.timestamp() * 1000),
        "checkoutSession": {
            "id": None,
            "clientReferenceId": None,
            "metadata": {},
            "customerEmail": None,
            "customerName": None,
        },
    }
    assert payment.amount_received == "2500000"
    assert event.deliveries.count() == 1


def test_an_anonymous_payment_is_paid_and_tells_nobody(api_client):
    from webhooks.models import WebhookEvent

    payment = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    _deposit(payment, 2_500_000)
    assert payment.status == "paid"
    assert not WebhookEvent.objects.exists()


def test_a_deposit_withdrawn_by_a_reorg_stops_counting_while_the_payment_awaits_the_rest(api_client):
    from chains.models import Deposit, Incident
    from chains.watcher import handle_deposit

    payment = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    first = _deposit(payment, 1_000_000, n=1)
    Deposit.objects.filter(pk=first.pk).update(status=Deposit.Status.WITHDRAWN, handled_at=None)
    first.refresh_from_db()

    assert handle_deposit(first)

    payment.refresh_from_db()
    assert (payment.status, payment.amount_received) == ("awaiting_payment", "0")
    assert not Incident.objects.exists()
    _deposit(payment, 2_500_000, n=2)
    assert (payment.status, payment.amount_received) == ("paid", "2500000")


def test_a_deposit_withdrawn_after_the_payment_was_paid_holds_it_for_staff(api_client):
    from chains.models import Deposit, Incident
    from chains.watcher import handle_deposit
    from quickpay.settlement import quick_payment_settle

    payment = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    paid = _deposit(payment, 2_500_000, n=1)
    Deposit.objects.filter(pk=paid.pk).update(status=Deposit.Status.WITHDRAWN, handled_at=None)
    paid.refresh_from_db()

    assert handle_deposit(paid)

    incident = Incident.objects.get()
    assert (incident.kind, incident.subject) == ("deposit_reorged", f"quick_payment:{payment.id}")
    assert quick_payment_settle(payment.id) == {}  # held: no sweep, no payout


def test_tasks_carry_their_modules_names_and_the_old_names_still_run(organization):
    from config.celery import app
    from quickpay import tasks

    assert tasks.expire_quick_payments.name == "quickpay.tasks.expire_quick_payments"
    assert tasks.settle_quick_payment.name == "quickpay.tasks.settle_quick_payment"
    assert {"platform_api.tasks.expire_quick_payments", "platform_api.tasks.settle_quick_payment"} <= set(
        app.tasks
    )
    assert app.tasks["platform_api.tasks.expire_quick_payments"]() == 0  # runs as the task it names
    schedule = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert "quickpay.tasks.expire_quick_payments" in schedule
    assert not any(name.startswith("platform_api.tasks.") and "quick" in name for name in schedule)
