"""Refunds on the platform interface: the rules of what may be refunded, where to and how it is funded; every
refusal is a 400 (or 404) naming its field and writes nothing."""

import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import AuditEvent
from checkout.models import Transaction
from refunds.models import Refund, RefundBalance
from refunds.services import refunds_expire
from tests.conftest import client_for
from tests.factories import (
    BASE,
    USDC_BASE,
    OrganizationFactory,
    QuickPaymentFactory,
    RefundBalanceFactory,
    RefundFactory,
    TransactionFactory,
    WebhookEndpointFactory,
    address,
    make_api_key,
)
from webhooks.models import WebhookDelivery, WebhookEvent

pytestmark = pytest.mark.django_db
PAYER = address(0x51)


@pytest.fixture
def paid(organization, tokens):
    """A completed payment of 10 USDC on Base, paid in USDC on Base from PAYER."""
    return TransactionFactory(
        organization=organization, status="completed", amount=10_000_000, from_address=PAYER
    )


def refund(client, body, **headers):
    return client.post("/api/v1/refunds", body, format="json", **headers)


def nothing_written():
    assert Refund.objects.count() == 0
    assert not WebhookEvent.objects.filter(event_type__startswith="refund.").exists()
    assert not AuditEvent.objects.filter(event_type__startswith="refund.").exists()


def test_a_refund_awaits_its_funding_at_its_own_address_and_goes_back_where_the_payer_paid_from(
    admin_client, organization, paid
):
    WebhookEndpointFactory(organization=organization, events=["refund.created", "refund.succeeded"])
    response = refund(
        admin_client, {"transaction": paid.id, "amount": "4000000", "reason": "requested_by_customer"}
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["object"] == "refund" and body["id"].startswith("re_")
    assert (body["transaction"], body["amount"], body["status"]) == (paid.id, "4000000", "requires_funding")
    assert body["currency"] == {"chain_id": BASE, "token_address": USDC_BASE}
    funding = body["funding"]
    assert (funding["method"], funding["chain_id"], funding["token_address"], funding["amount"]) == (
        "deposit",
        BASE,
        USDC_BASE,
        "4000000",
    )
    assert funding["address"].startswith("0x") and funding["address"] != PAYER
    hours = (funding["expires_at"] / 1000 - timezone.now().timestamp()) / 3600
    assert 23.9 < hours <= 24
    assert body["destination"] == {
        "chain_id": BASE,
        "token_address": USDC_BASE,
        "address": PAYER,
        "amount": "4000000",
        "quoted_amount": "4000000",  # the same chain and token: the amount itself
    }
    assert (body["tx_hashes"], body["failure_reason"], body["reason"]) == ([], None, "requested_by_customer")
    assert admin_client.get(f"/api/v1/refunds/{body['id']}").json() == body

    transaction = admin_client.get(f"/api/v1/transactions/{paid.id}").json()
    assert (transaction["refunds"], transaction["amount_refunded"]) == ([body["id"]], "0")  # not funded yet
    event = WebhookEvent.objects.get(event_type="refund.created")
    assert (event.subject, event.data) == (body["id"], body)
    assert WebhookDelivery.objects.filter(event=event).count() == 1
    assert AuditEvent.objects.filter(event_type="refund.created", resource_id=body["id"]).count() == 1


def test_partial_refunds_never_add_up_to_more_than_the_payment(admin_client, paid):
    first = refund(admin_client, {"transaction": paid.id, "amount": "4000000"}).json()
    too_much = refund(admin_client, {"transaction": paid.id, "amount": "6000001"})
    assert too_much.status_code == 400
    error = too_much.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_field_value", "amount")
    assert "6000000 of 10000000" in error["message"]
    assert Refund.objects.count() == 1

    rest = refund(admin_client, {"transaction": paid.id}).json()  # default: what is left
    assert rest["amount"] == "6000000"
    done = refund(admin_client, {"transaction": paid.id})
    assert (done.status_code, done.json()["error"]["param"]) == (400, "amount")
    assert "refunded in full" in done.json()["error"]["message"]

    # a canceled refund holds nothing: its amount may be refunded again
    assert admin_client.post(f"/api/v1/refunds/{first['id']}/cancel").json()["status"] == "canceled"
    assert refund(admin_client, {"transaction": paid.id}).json()["amount"] == "4000000"


@pytest.mark.parametrize(
    ("amount", "why"),
    [
        ("0", "greater than zero"),
        ("-1", "string of digits"),
        ("1.5", "string of digits"),
        (5, "string of digits"),
        ("", "string of digits"),
        ("10000001", "what is left"),
    ],
)
def test_a_bad_amount_is_refused_naming_it_and_writes_nothing(admin_client, paid, amount, why):
    response = refund(admin_client, {"transaction": paid.id, "amount": amount})

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_field_value", "amount")
    assert why in error["message"]
    nothing_written()


@pytest.mark.parametrize(
    ("destination", "param", "code"),
    [
        (
            {"chain_id": 999999, "token_address": USDC_BASE, "address": PAYER},
            "destination.chain_id",
            "invalid_field_value",
        ),
        (
            {"chain_id": BASE, "token_address": address(0x99), "address": PAYER},
            "destination.token_address",
            "invalid_field_value",
        ),
        (
            {"chain_id": BASE, "token_address": USDC_BASE, "address": "0x12"},
            "destination.address",
            "invalid_address",
        ),
        (
            {"chain_id": "8453", "token_address": USDC_BASE, "address": PAYER},
            "destination.chain_id",
            "invalid_field_value",
        ),
    ],
)
def test_a_bad_destination_is_refused_naming_the_field(admin_client, paid, destination, param, code):
    response = refund(admin_client, {"transaction": paid.id, "destination": destination})

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["param"], error["code"]) == (param, code)
    nothing_written()


@pytest.mark.parametrize("what", ["zero", "token", "vault"])
def test_a_destination_that_would_lose_the_money_is_refused(admin_client, paid, settings, what):
    """The probe's refund to the token's own contract was lost (issue 64, item 7)."""
    lost = {"zero": "0x" + "0" * 40, "token": USDC_BASE, "vault": settings.VAULT_ADDRESS}[what]
    destination = {"chain_id": BASE, "token_address": USDC_BASE, "address": lost}

    response = refund(admin_client, {"transaction": paid.id, "destination": destination})

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["param"], error["code"]) == ("destination.address", "invalid_field_value")
    assert {"zero": "zero address", "token": "token's contract", "vault": "own addresses"}[what] in error[
        "message"
    ]
    nothing_written()


def test_another_address_on_the_same_chain_and_token_is_a_destination(admin_client, paid):
    other = address(0x77)
    body = refund(
        admin_client,
        {
            "transaction": paid.id,
            "destination": {"chain_id": BASE, "token_address": USDC_BASE, "address": other},
        },
    ).json()
    assert body["destination"]["address"] == other


def test_a_payer_whose_address_is_unknown_needs_a_destination(admin_client, organization, tokens):
    paid = TransactionFactory(organization=organization, status="completed", from_address="")

    response = refund(admin_client, {"transaction": paid.id})

    assert response.status_code == 400
    assert (response.json()["error"]["code"], response.json()["error"]["param"]) == (
        "missing_required_field",
        "destination.address",
    )
    nothing_written()


def test_only_a_completed_payment_of_ones_own_organization_is_refundable(admin_client, organization, tokens):
    pending = TransactionFactory(organization=organization, status="confirming", from_address=PAYER)
    theirs = TransactionFactory(organization=OrganizationFactory(), status="completed", from_address=PAYER)
    their_qp = QuickPaymentFactory(organization=theirs.organization, status="paid", payer_address=PAYER)

    response = refund(admin_client, {"transaction": pending.id})
    assert (response.status_code, response.json()["error"]["param"]) == (400, "transaction")
    for unknown in (theirs.id, their_qp.id, "txn_nothing", "re_what"):
        response = refund(admin_client, {"transaction": unknown})
        assert (response.status_code, response.json()["error"]["code"]) == (404, "resource_not_found"), (
            unknown
        )
    nothing_written()


def test_a_paid_quick_payment_is_refunded_the_same_way(admin_client, organization, tokens):
    payment = QuickPaymentFactory(
        organization=organization, status="paid", payer_address=PAYER, amount=2_500_000
    )
    awaiting = QuickPaymentFactory(organization=organization, payer_address=PAYER)

    body = refund(admin_client, {"transaction": payment.id}).json()
    assert (body["transaction"], body["amount"], body["destination"]["address"]) == (
        payment.id,
        "2500000",
        PAYER,
    )
    assert refund(admin_client, {"transaction": awaiting.id}).json()["error"]["param"] == "transaction"


def test_a_refund_balance_that_covers_it_funds_it_at_once(admin_client, organization, paid):
    RefundBalanceFactory(organization=organization, amount=5_000_000)

    body = refund(admin_client, {"transaction": paid.id, "amount": "3000000"}).json()
    assert (body["status"], body["funding"]["method"], body["funding"]["address"]) == (
        "pending",
        "balance",
        None,
    )
    assert admin_client.get(f"/api/v1/transactions/{paid.id}").json()["amount_refunded"] == "3000000"
    balance = admin_client.get("/api/v1/refund-balance").json()
    assert [(b["chain_id"], b["token_address"], b["amount"]) for b in balance["data"]] == [
        (BASE, USDC_BASE, "2000000")
    ]

    # what the balance cannot cover waits for a deposit, and takes nothing from it
    body = refund(admin_client, {"transaction": paid.id, "amount": "2000001"}).json()
    assert (body["status"], body["funding"]["method"]) == ("requires_funding", "deposit")
    assert RefundBalance.objects.get().amount == 2_000_000


def test_cancel_only_before_funding(admin_client, organization, paid):
    RefundBalanceFactory(organization=organization, amount=1_000_000)
    funded = refund(admin_client, {"transaction": paid.id, "amount": "1000000"}).json()
    waiting = refund(admin_client, {"transaction": paid.id, "amount": "1000000"}).json()

    canceled = admin_client.post(f"/api/v1/refunds/{waiting['id']}/cancel")
    assert canceled.json()["status"] == "canceled"
    assert WebhookEvent.objects.filter(subject=waiting["id"], event_type="refund.updated").count() == 1
    assert AuditEvent.objects.filter(event_type="refund.canceled", resource_id=waiting["id"]).count() == 1
    for refused in (funded, waiting):
        response = admin_client.post(f"/api/v1/refunds/{refused['id']}/cancel")
        assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_status_transition")
    assert admin_client.post("/api/v1/refunds/re_nothing/cancel").status_code == 404


def test_funding_that_never_arrives_cancels_the_refund_after_a_day(admin_client, paid):
    body = refund(admin_client, {"transaction": paid.id}).json()

    assert refunds_expire(now=timezone.now() + timedelta(hours=23)) == 0
    assert refunds_expire(now=timezone.now() + timedelta(hours=24, seconds=1)) == 1
    after = admin_client.get(f"/api/v1/refunds/{body['id']}").json()
    assert (after["status"], after["failure_reason"]) == (
        "canceled",
        "its funding did not arrive before it expired",
    )
    assert WebhookEvent.objects.get(event_type="refund.updated").data["status"] == "canceled"


def test_lists_filter_by_status_and_transaction(admin_client, organization, paid):
    other = TransactionFactory(organization=organization, status="completed", from_address=PAYER)
    a = refund(admin_client, {"transaction": paid.id, "amount": "1"}).json()
    b = refund(admin_client, {"transaction": other.id, "amount": "1"}).json()
    admin_client.post(f"/api/v1/refunds/{a['id']}/cancel")

    ids = lambda query: [r["id"] for r in admin_client.get(f"/api/v1/refunds{query}").json()["data"]]  # noqa: E731
    assert ids("") == [b["id"], a["id"]]
    assert ids("?status=canceled") == [a["id"]]
    assert ids(f"?transaction={other.id}") == [b["id"]]
    assert admin_client.get("/api/v1/refunds?status=lost").json()["error"]["param"] == "status"
    assert OrganizationFactory() and ids("?status=requires_funding") == [b["id"]]


def test_a_read_key_reads_refunds_and_cannot_refund(organization, paid):
    reader = client_for(make_api_key(organization, permissions=["read"])[1])

    response = refund(reader, {"transaction": paid.id})
    assert (response.status_code, response.json()["error"]["code"]) == (403, "insufficient_permissions")
    assert reader.get("/api/v1/refunds").status_code == 200
    nothing_written()


def test_the_same_idempotency_key_makes_one_refund(admin_client, paid):
    first = refund(admin_client, {"transaction": paid.id, "amount": "5"}, HTTP_IDEMPOTENCY_KEY="refund-1")
    again = refund(admin_client, {"transaction": paid.id, "amount": "5"}, HTTP_IDEMPOTENCY_KEY="refund-1")

    assert first.json()["id"] == again.json()["id"]
    assert Refund.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_thirty_concurrent_partial_refunds_never_exceed_the_payment(tokens):
    organization = OrganizationFactory()
    raw_key = make_api_key(organization, permissions=["write"])[1]
    paid = TransactionFactory(organization=organization, status="completed", amount=100, from_address=PAYER)
    barrier = threading.Barrier(30)
    answers: list[tuple[int, str | None]] = []

    def merchant():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
        try:
            barrier.wait()
            response = refund(client, {"transaction": paid.id, "amount": "7"})
            answers.append((response.status_code, response.json().get("error", {}).get("param")))
        finally:
            close_old_connections()

    threads = [threading.Thread(target=merchant) for _ in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(answers) == [(201, None)] * 14 + [(400, "amount")] * 16  # 14 x 7 = 98 of 100
    assert sum(int(r.amount) for r in Refund.objects.all()) == 98
    assert len(Transaction.objects.get(pk=paid.pk).refund_ids) == 14


@pytest.mark.parametrize(
    ("locale", "subject", "line"),
    [
        ("en", "Acme refunded 4 USDC to you", "Acme has sent you a refund of your payment."),
        ("es", "Acme te devolvió 4 USDC", "Acme te ha enviado un reembolso de tu pago."),
    ],
)
def test_the_payer_who_gave_an_email_is_told_of_the_refund_in_their_language(
    admin_client, organization, tokens, locale, subject, line
):
    from checkout.receipts import MERCHANT_REFUND_EMAIL
    from refunds.services import refund_delivered
    from tests.factories import PlatformCheckoutSessionFactory, tx_hash
    from webhooks.models import NotificationEmail

    organization.name = "Acme"
    organization.save()
    session = PlatformCheckoutSessionFactory(
        organization=organization, customer_email="payer@example.com", locale=locale
    )
    paid = TransactionFactory(
        organization=organization, session=session, status="completed", from_address=PAYER
    )
    RefundBalanceFactory(organization=organization, amount=4_000_000)
    body = refund(admin_client, {"transaction": paid.id, "amount": "4000000"}).json()
    assert body["status"] == "pending" and not NotificationEmail.objects.exists()

    refund_delivered(body["id"], chain_id=BASE, tx_hash=tx_hash(7))
    refund_delivered(body["id"], chain_id=BASE, tx_hash=tx_hash(7))  # told again: nothing more

    email = NotificationEmail.objects.get(event_type=MERCHANT_REFUND_EMAIL)
    assert (email.to_address, email.subject) == ("payer@example.com", subject)
    assert line in email.body and tx_hash(7) in email.body and PAYER in email.body
    assert f"/pay/s/{session.id}" in email.body


def test_a_delivery_that_fails_on_chain_puts_the_amount_in_the_refund_balance(
    admin_client, organization, paid
):
    from chains.models import OutboxTx
    from refunds.handlers import refund_tx_finished
    from tests.factories import OutboxTxFactory

    WebhookEndpointFactory(organization=organization, events=["refund.failed"])
    RefundBalanceFactory(organization=organization, amount=4_000_000)
    body = refund(admin_client, {"transaction": paid.id, "amount": "4000000"}).json()
    assert body["status"] == "pending" and RefundBalance.objects.get().amount == 0
    tx = OutboxTxFactory(
        key=f"refund:{body['id']}:delivery", status=OutboxTx.Status.FAILED, error="reverted: blocked"
    )

    refund_tx_finished(tx)
    refund_tx_finished(tx)  # told twice: credited once

    after = admin_client.get(f"/api/v1/refunds/{body['id']}").json()
    assert after["status"] == "failed" and "blocked" in after["failure_reason"]
    assert RefundBalance.objects.get().amount == 4_000_000
    assert [e.data["status"] for e in WebhookEvent.objects.filter(event_type="refund.failed")] == ["failed"]
    assert admin_client.get(f"/api/v1/transactions/{paid.id}").json()["amount_refunded"] == "0"
    # a failed refund holds nothing of the payment: it is refunded again, from the balance it went back to
    again = refund(admin_client, {"transaction": paid.id, "amount": "10000000"}).json()
    assert (again["status"], again["funding"]["method"]) == ("requires_funding", "deposit")
    assert refund(admin_client, {"transaction": paid.id}).json()["error"]["param"] == "amount"


def test_an_order_that_sends_the_vaults_payment_back_fails_the_refund_into_the_balance(organization, paid):
    from orders import events
    from tests.factories import OrderFactory

    order = OrderFactory(organization=organization, owner="refund", status="expired")
    refund = RefundFactory(
        organization=organization,
        payment_id=paid.id,
        amount=3_000_000,
        funding_method="balance",
        status="pending",
        destination_token_address=address(0x98),
        order_id=order.pk,
    )

    # the order had expired before the vault's payment landed: it went back to the vault as a late payment
    events.announce(events.RefundPaid(order=order, refund=None))
    events.announce(events.RefundPaid(order=order, refund=None))

    refund.refresh_from_db()
    assert refund.status == "failed" and "sent the payment back" in refund.failure_reason
    assert RefundBalance.objects.get(organization=organization).amount == 3_000_000  # credited once


def test_every_refund_write_checks_the_callers_permission_at_the_service(organization, paid):
    from core.errors import Forbidden
    from platform_api.context import RequestContext
    from refunds import services
    from refunds.models import RefundTopUp, RefundWithdrawal

    def ctx(permission):
        return RequestContext(
            organization=organization,
            api_key=None,
            ip_address="",
            method="POST",
            path="",
            permission=permission,
        )

    RefundBalanceFactory(organization=organization, amount=5_000_000)
    waiting = RefundFactory(organization=organization, payment_id=paid.id)
    refused = [
        lambda: services.refund_create(
            ctx=ctx("read"), organization=organization, data={"transaction": paid.id}
        ),
        lambda: services.refund_cancel(ctx=ctx("read"), refund=waiting),
        lambda: services.refund_top_up_create(
            ctx=ctx("read"), organization=organization, chain_id=BASE, token_address=USDC_BASE
        ),
        lambda: services.refund_balance_withdraw(
            ctx=ctx("write"),
            organization=organization,
            chain_id=BASE,
            token_address=USDC_BASE,
            amount=1,
            address=PAYER,
        ),
    ]
    for call in refused:
        with pytest.raises(Forbidden):
            call()

    assert list(Refund.objects.values_list("pk", "status")) == [(waiting.pk, "requires_funding")]
    assert not RefundTopUp.objects.exists() and not RefundWithdrawal.objects.exists()
    assert RefundBalance.objects.get().amount == 5_000_000
    assert not AuditEvent.objects.exists()
