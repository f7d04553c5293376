"""Refunds in the dashboard: a member who may write refunds a payment (all or part, another address), follows
it and cancels it before it is funded; a viewer reads them and cannot refund; refusals name their field."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEvent
from checkout.display import qr_svg
from refunds.models import Refund
from tests.dashboard.conftest import signed_in
from tests.factories import (
    OrganizationFactory,
    RefundBalanceFactory,
    RefundFactory,
    TransactionFactory,
    address,
)

pytestmark = pytest.mark.django_db
PAYER = address(0x51)


@pytest.fixture
def paid(organization, tokens):
    return TransactionFactory(
        organization=organization, status="completed", amount=10_000_000, from_address=PAYER
    )


def form_token(page: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)


def test_an_owner_refunds_part_of_a_payment_and_funds_it_at_its_own_address(organization, owner, paid):
    browser = signed_in(owner)
    page = browser.get(f"/dashboard/payments/{paid.id}").content.decode()
    assert 'id="refund-form"' in page and "Up to 10 USDC" in page and "fee is not returned" in page

    token = form_token(page)
    response = browser.post(
        f"/dashboard/payments/{paid.id}/refund",
        {"form_token": token, "amount": "4.25", "reason": "requested_by_customer", "address": ""},
    )
    refund = Refund.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/dashboard/refunds/{refund.id}"
    assert (refund.amount, refund.destination_address, refund.status) == (
        4_250_000,
        PAYER,
        "requires_funding",
    )
    event = AuditEvent.objects.get(event_type="refund.created")
    assert event.actor.startswith("member:")
    again = browser.post(f"/dashboard/payments/{paid.id}/refund", {"form_token": token, "amount": "4.25"})
    assert (
        again["Location"] == f"/dashboard/refunds/{refund.id}" and Refund.objects.count() == 1
    )  # a double submit

    page = browser.get(f"/dashboard/refunds/{refund.id}").content.decode()
    assert refund.funding_address in page and "4.25 USDC" in page and 'id="wallet-data"' in page
    assert 'data-status="requires_funding">Awaiting your funding<' in page  # in words, not the API's value
    assert 'data-copy="funding-address"' in page and 'id="funding-amount" data-value="4.25"' in page
    uri = f"ethereum:{refund.token_address}@{refund.chain_id}/transfer?address={refund.funding_address}&uint256=4250000"
    assert qr_svg(uri) in page  # the QR code a wallet app reads: token, chain, address and amount
    assert browser.get(f"/dashboard/refunds/{refund.id}/owed").json() == {"remaining": "4250000"}
    assert refund.id in browser.get("/dashboard/refunds/").content.decode()
    assert refund.id in browser.get(f"/dashboard/payments/{paid.id}").content.decode()

    response = browser.post(f"/dashboard/refunds/{refund.id}/cancel")
    refund.refresh_from_db()
    assert response.status_code == 302 and refund.status == "canceled"
    assert browser.get(f"/dashboard/refunds/{refund.id}/owed").json() == {"remaining": None}
    assert AuditEvent.objects.filter(event_type="refund.canceled").count() == 1


def test_a_refund_the_balance_covers_is_pending_at_once_to_another_address(organization, owner, paid):
    RefundBalanceFactory(organization=organization, amount=20_000_000)
    browser = signed_in(owner)
    token = form_token(browser.get(f"/dashboard/payments/{paid.id}").content.decode())
    other = address(0x77)

    browser.post(
        f"/dashboard/payments/{paid.id}/refund", {"form_token": token, "amount": "", "address": other}
    )

    refund = Refund.objects.get()
    assert (refund.amount, refund.destination_address, refund.status) == (10_000_000, other, "pending")
    page = browser.get(f"/dashboard/refunds/{refund.id}").content.decode()
    assert "from your refund balance" in page and 'id="wallet-data"' not in page
    assert (
        'id="refund-form"' not in browser.get(f"/dashboard/payments/{paid.id}").content.decode()
    )  # nothing left


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"amount": "10.000001"}, "amount", "what is left"),
        ({"amount": "0"}, "amount", "greater than zero"),
        ({"amount": "1.0000001"}, "amount", "At most 6 decimals"),
        ({"address": "0x12"}, "address", "40 hexadecimal"),
    ],
)
def test_a_refused_refund_says_why_beside_its_field_and_writes_nothing(
    organization, owner, paid, fields, field, message
):
    browser = signed_in(owner)
    token = form_token(browser.get(f"/dashboard/payments/{paid.id}").content.decode())

    response = browser.post(f"/dashboard/payments/{paid.id}/refund", {"form_token": token, **fields})

    assert response.status_code == 400
    page = response.content.decode()
    assert f'id="{field}-error"' in page and message in page
    assert not Refund.objects.exists()


def test_a_viewer_reads_refunds_and_cannot_refund_or_cancel(organization, viewer, paid):
    refund = RefundFactory(organization=organization, payment_id=paid.id, amount=1)
    browser = signed_in(viewer)

    assert 'id="refund-form"' not in browser.get(f"/dashboard/payments/{paid.id}").content.decode()
    assert browser.get(f"/dashboard/refunds/{refund.id}").status_code == 200
    assert browser.post(f"/dashboard/payments/{paid.id}/refund", {"amount": "1"}).status_code == 403
    assert browser.post(f"/dashboard/refunds/{refund.id}/cancel").status_code == 403
    assert Refund.objects.get().status == "requires_funding" and Refund.objects.count() == 1


def test_another_organizations_refund_and_payment_are_not_found(owner, tokens):
    theirs = TransactionFactory(organization=OrganizationFactory(), status="completed", from_address=PAYER)
    browser = signed_in(owner)

    assert browser.post(f"/dashboard/payments/{theirs.id}/refund", {"amount": "1"}).status_code == 404
    assert browser.get("/dashboard/refunds/re_nothing").status_code == 404
    assert not Refund.objects.exists()


def test_a_top_up_address_is_one_click_away(organization, owner, tokens):
    from refunds.models import RefundTopUp
    from tests.factories import BASE, USDC_BASE

    browser = signed_in(owner)
    assert "Get a top-up address" in browser.get("/dashboard/refunds/").content.decode()

    response = browser.post("/dashboard/refunds/top-ups", {"token": f"{BASE}:{USDC_BASE}"})
    top_up = RefundTopUp.objects.get()
    assert response["Location"] == f"/dashboard/refunds/top-ups/{top_up.id}"
    page = browser.get(response["Location"]).content.decode()
    assert top_up.deposit_address in page and "USDC" in page
    browser.post("/dashboard/refunds/top-ups", {"token": "1:0xnothing"})
    assert RefundTopUp.objects.count() == 1


def test_a_withdrawal_needs_a_second_factor_and_a_confirmed_address(organization, owner, tokens):
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from chains.models import OutboxTx
    from dashboard.members import member_create
    from refunds.models import RefundBalance, RefundWithdrawal
    from tests.dashboard.conftest import PASSWORD, code_for
    from tests.factories import BASE, USDC_BASE
    from webhooks.models import NotificationEmail

    RefundBalanceFactory(organization=organization, amount=5_000_000)
    to = address(0x99)
    fields = {"balance": f"{BASE}:{USDC_BASE}", "amount": "2", "address": to}

    admin = member_create(
        organization=organization, email="admin@shop.example", role="admin", password=PASSWORD
    )
    unverified = signed_in(admin)
    assert "needs two-factor sign-in" in unverified.get("/dashboard/refunds/").content.decode()
    unverified.post("/dashboard/refunds/withdraw", {**fields, "confirmed": to})
    assert not RefundWithdrawal.objects.exists()

    browser = signed_in(owner)  # an owner signs in with a code
    too_much = browser.post("/dashboard/refunds/withdraw", {**fields, "amount": "5.000001"})
    assert too_much.status_code == 400 and 'id="amount-error"' in too_much.content.decode()
    asked = browser.post("/dashboard/refunds/withdraw", fields).content.decode()
    assert 'id="withdraw-confirm"' in asked and to in asked and "2 USDC" in asked
    assert not RefundWithdrawal.objects.exists()  # nothing until confirmed

    # A signed-in session alone sends nothing (a stolen cookie): the confirmation asks a fresh code.
    for code in ("", "000000"):
        refused = browser.post("/dashboard/refunds/withdraw", {**fields, "confirmed": to, "code": code})
        assert refused.status_code == 400 and 'id="withdraw-code-error"' in refused.content.decode()
    assert not RefundWithdrawal.objects.exists() and not OutboxTx.objects.exists()
    device = TOTPDevice.objects.get(user=owner.user)
    TOTPDevice.objects.filter(pk=device.pk).update(last_t=-1, throttling_failure_timestamp=None)
    device.refresh_from_db()

    done = browser.post("/dashboard/refunds/withdraw", {**fields, "confirmed": to, "code": code_for(device)})
    assert done.status_code == 302
    told = NotificationEmail.objects.filter(event_type="refund_balance.withdrawn")
    assert [e.to_address for e in told] == [owner.user.email]
    assert to in told.get().body and "2 USDC" in told.get().body
    withdrawal = RefundWithdrawal.objects.get()
    assert (withdrawal.amount, withdrawal.address, withdrawal.status) == (2_000_000, to, "pending")
    assert withdrawal.requested_by.startswith("member:")
    assert RefundBalance.objects.get().amount == 3_000_000
    tx = OutboxTx.objects.get(key=f"refund:{withdrawal.id}:withdrawal")
    assert (tx.chain_id, tx.signer, tx.status) == (BASE, "vault", "queued")
    assert AuditEvent.objects.filter(
        event_type="refund_balance.withdrawn", resource_id=withdrawal.id
    ).exists()


def test_only_an_admin_withdraws(organization, viewer, tokens):
    RefundBalanceFactory(organization=organization)
    browser = signed_in(viewer)
    assert browser.post("/dashboard/refunds/withdraw", {"amount": "1"}).status_code == 403


def test_a_refund_delivered_by_an_order_shows_the_service_fee_taken_from_it(organization, viewer, paid):
    from tests.factories import OrderFactory

    order = OrderFactory(organization=organization, fee={"finalFeeBps": 100})
    refund = RefundFactory(
        organization=organization,
        payment_id=paid.id,
        amount=10_000_000,
        funding_method="balance",
        status="pending",
        destination_token_address=address(0x98),
        destination_amount=None,
        order_id=order.pk,
    )

    page = signed_in(viewer).get(f"/dashboard/refunds/{refund.id}").content.decode()

    assert 'id="refund-fee">0.1 USDC' in page and "quoted once it is funded" in page
