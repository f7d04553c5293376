"""Quick payments: create one with its own watched deposit address, count what arrives, expire the unpaid."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chains.families import deposit_address
from chains.incidents import incident_record
from chains.keys import OwnerKind, Step, outbox_key
from chains.models import Incident, OutboxTx
from chains.tokens import check_amount_worth, token_get
from chains.watcher import watch_address
from core.errors import InvalidRequest
from core.tasks import Later
from platform_api import testmode
from platform_api.models import Organization
from quickpay.models import QuickPayment, QuickPaymentDeposit, new_quick_payment_id
from quickpay.states import QUICK_PAYMENT

SETTLE_QUICK_PAYMENT = Later("quickpay.tasks.settle_quick_payment")

# The owner a quick payment's deposit address is watched under (`quick_payment:<qp_id>`) and its CREATE2 salt's
# kind: every quick payment's address is derived from it, so it never changes. chains.handlers reads it as
# OwnerKind.QUICKPAY, the kind its outbox keys (`quickpay:<qp_id>:payout`) and handlers use.
QUICK_PAYMENT_OWNER = "quick_payment"


@transaction.atomic
def quick_payment_create(
    *,
    amount: int,
    token_address: str,
    chain_id: int,
    recipient_address: str,
    organization: Organization | None = None,
) -> QuickPayment:
    """Record a one-shot payment in a registry token, give it its own deposit address and watch that address.

    The deposit watcher hands what arrives there to the handler registered for
    owners `quick_payment:<id>` (chains.handlers) until a day after the payment expires (a
    late deposit is still seen, so that it can be refunded).
    """
    testmode.ensure_test_chains(organization, {"chain_id": chain_id})
    token = token_get(chain_id=chain_id, address=token_address)
    if token is None:
        raise InvalidRequest(
            f"{token_address} is not a token this service knows on chain {chain_id}.", field="token_address"
        )
    check_amount_worth(chain_id=chain_id, address=token.address, amount=amount, field="amount")
    payment_id = new_quick_payment_id()
    address = deposit_address(
        chain_id=chain_id, kind=QUICK_PAYMENT_OWNER, identifier=payment_id, field="chain_id"
    )
    now = timezone.now()
    payment = QuickPayment.objects.create(
        id=payment_id,
        organization=organization,
        amount=amount,
        token_address=token.address,
        chain_id=chain_id,
        recipient_address=recipient_address,
        deposit_address=address,
        created_at=now,
        expires_at=now + timedelta(seconds=settings.QUICK_PAY_TTL_SECONDS),
    )
    watch_address(
        chain_id=chain_id,
        address=address,
        owner=f"{QUICK_PAYMENT_OWNER}:{payment_id}",
        watch_until=payment.expires_at + timedelta(days=1),
    )
    return payment


def quick_payment_record_deposit(
    *,
    payment_id: str,
    token: str,
    amount: int,
    from_address: str,
    tx_hash: str,
    deposit_id: int | None = None,
) -> QuickPayment | None:
    """Count a deposit toward a quick payment, under its row lock; the payment when this deposit paid it.

    Only the payment's token counts, and only while the payment awaits it (beat
    marks it expired at `expires_at`, like orders); partial deposits add up. Anything else (another token, a late
    deposit, what arrives after it was paid) stays recorded by the watcher for
    a refund. Runs in the watcher's handling transaction, once per deposit.
    """
    payment = QuickPayment.objects.select_for_update().filter(pk=payment_id).first()
    if payment is None:
        return None
    if deposit_id is not None and QuickPaymentDeposit.objects.filter(deposit_id=deposit_id).exists():
        return None  # handled before (a retried handler)
    counts = (
        payment.status == QuickPayment.Status.AWAITING_PAYMENT
        and token.lower() == payment.token_address.lower()
    )
    owed = max(0, int(payment.amount) - int(payment.amount_received))
    counted = min(amount, owed) if counts else 0
    if deposit_id is not None:
        QuickPaymentDeposit.objects.create(
            payment=payment, deposit_id=deposit_id, counted=counted, refund=amount - counted
        )
    if not counts:
        return None
    payment.amount_received = str(int(payment.amount_received) + amount)
    payment.payer_address = payment.payer_address or from_address
    fields = ["amount_received", "payer_address"]
    if int(payment.amount_received) >= int(payment.amount):
        QUICK_PAYMENT.enter(payment, QuickPayment.Status.PAID)
        payment.paid_at, payment.tx_hash = timezone.now(), tx_hash
        fields += ["status", "paid_at", "tx_hash"]
    payment.save(update_fields=fields)
    return payment if payment.status == QuickPayment.Status.PAID else None


@transaction.atomic
def quick_payment_withdraw_deposit(*, payment_id: str, deposit_id: int) -> None:
    """A reorg took a deposit to the payment off the chain, and it did not come back: it stops counting.

    While the payment still awaits its amount and nothing was sent for the
    deposit, the payment just waits for the rest again. Otherwise staff must
    look: an incident about the payment holds its settlement.
    """
    payment = QuickPayment.objects.select_for_update().filter(pk=payment_id).first()
    item = QuickPaymentDeposit.objects.filter(payment_id=payment_id, deposit_id=deposit_id).first()
    if payment is None or item is None or not (int(item.counted) or int(item.refund)):
        return
    counted = int(item.counted)
    QuickPaymentDeposit.objects.filter(pk=item.pk).update(counted=0, refund=0)
    sent = OutboxTx.objects.filter(
        key__in=[
            outbox_key(OwnerKind.QUICKPAY, payment_id, Step.PAYOUT),
            outbox_key(OwnerKind.QUICKPAY, payment_id, Step.REFUND, deposit_id),
            outbox_key(OwnerKind.QUICKPAY, payment_id, Step.RETURN, deposit_id),
        ]
    ).exists()
    if payment.status == QuickPayment.Status.AWAITING_PAYMENT and not sent:
        payment.amount_received = str(int(payment.amount_received) - counted)
        payment.save(update_fields=["amount_received"])
        return
    incident_record(
        kind=Incident.Kind.DEPOSIT_REORGED,
        subject=f"{QUICK_PAYMENT_OWNER}:{payment_id}",
        chain_id=payment.chain_id,
        summary=f"quick payment {payment_id} ({payment.status}): a deposit it counted or was returning was taken "
        "off the chain by a reorg; nothing more is sent for it until staff resolve this",
        details={"deposit": deposit_id, "counted": str(counted)},
    )


def quick_payments_expire(*, now: datetime | None = None) -> int:
    """Mark unpaid quick payments whose time has passed as expired (one conditional update); those that
    received part of their amount are settled, which sends it back."""
    due = QuickPayment.objects.filter(
        status=QuickPayment.Status.AWAITING_PAYMENT, expires_at__lte=now or timezone.now()
    )
    partly_paid = list(due.exclude(amount_received="0").values_list("pk", flat=True))
    expired = QUICK_PAYMENT.move(due, to=QuickPayment.Status.EXPIRED)
    for payment_id in partly_paid:
        enqueue_quick_payment_settlement(payment_id)
    return expired


def enqueue_quick_payment_settlement(payment_id: str) -> None:
    transaction.on_commit(lambda: SETTLE_QUICK_PAYMENT.delay(payment_id))
