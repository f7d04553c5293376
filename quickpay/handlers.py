"""What the chains hand the quick payments: their deposits (confirmed, or withdrawn by a reorg) and their outbox
transactions' outcomes. Registered with `chains.handlers` when the app is ready."""

from __future__ import annotations

from chains.collection import all_mined
from chains.handlers import PaymentDue, deposit_handler, outbox_handler, payable
from chains.keys import OwnerKind, Step, outbox_key, owner_id
from chains.models import Deposit, OutboxTx
from ledger.balance import (
    PaymentRefunded,
    PaymentSettled,
    balance_payment_refunded,
    balance_payment_settled,
    postings_of,
)
from ledger.models import Account, Entry
from quickpay.models import QuickPayment, QuickPaymentDeposit
from quickpay.services import (
    QUICK_PAYMENT_OWNER,
    enqueue_quick_payment_settlement,
    quick_payment_record_deposit,
    quick_payment_withdraw_deposit,
)
from quickpay.signals import Progress, quick_payment_progressed
from webhooks.events import PAYMENT_EVENTS, Payment, PaymentOutcome, emit_payment
from webhooks.models import WebhookEvent


@deposit_handler(OwnerKind.QUICKPAY)
def quick_payment_deposit_changed(deposit: Deposit) -> None:
    """Called in the transaction that records the deposit, or withdraws it (or retries either); idempotent."""
    identifier = owner_id(deposit.owner)
    if deposit.status == Deposit.Status.WITHDRAWN:
        quick_payment_withdraw_deposit(payment_id=identifier, deposit_id=deposit.pk)
        enqueue_quick_payment_settlement(identifier)
    else:
        _quick_payment_deposit(deposit, identifier)


def _quick_payment_deposit(deposit: Deposit, payment_id: str) -> None:
    paid = quick_payment_record_deposit(
        payment_id=payment_id,
        token=deposit.token,
        amount=int(deposit.amount),
        from_address=deposit.from_address,
        tx_hash=deposit.tx_hash,
        deposit_id=deposit.pk,
    )
    enqueue_quick_payment_settlement(payment_id)  # the payout, or what goes back
    if paid is not None and paid.organization_id:  # an anonymous quick payment has no balance to show
        _payment_recorded(paid, paid.organization_id)
    counted = QuickPaymentDeposit.objects.filter(deposit_id=deposit.pk, counted__gt=0).exists()
    if counted:
        _progressed(payment_id, Progress.RECEIVED)


def _progressed(payment_id: str, progress: Progress) -> None:
    payment = QuickPayment.objects.filter(pk=payment_id).first()
    if payment is not None and payment.organization_id:
        quick_payment_progressed.send(sender=QuickPayment, payment=payment, progress=progress)


def _as_payment(payment: QuickPayment, *, status: str) -> Payment:
    return Payment(
        id=payment.id,
        amount=int(payment.amount),
        token_address=payment.token_address,
        chain_id=payment.chain_id,
        sender_address=payment.payer_address or None,
        recipient_address=payment.recipient_address,
        tx_hash=payment.tx_hash or None,
        status=status,
        created_at=payment.created_at,
        completed_at=payment.paid_at,
    )


def _payment_recorded(paid: QuickPayment, organization_id: str) -> None:
    balance_payment_settled(
        PaymentSettled(
            organization_id=organization_id,
            payment_id=paid.id,
            chain_id=paid.chain_id,
            token_address=paid.token_address,
            gross=int(paid.amount),
            net=int(paid.amount),
            tx_hashes=[("deposit", paid.chain_id, paid.tx_hash)],
            posting_keys=postings_of(owner=f"{QUICK_PAYMENT_OWNER}:{paid.id}"),
            description=f"quick payment {paid.id}",
        )
    )


@outbox_handler(OwnerKind.QUICKPAY)
def quick_payment_tx_finished(tx: OutboxTx) -> None:
    """One of a quick payment's transactions was mined or failed; settle it on. A refund or a return mined
    is a balance transaction of the payment's organization (what the ledger posted for it, to the payer)."""
    key = tx.parsed_key
    payment_id = key.id
    enqueue_quick_payment_settlement(payment_id)
    if tx.status != OutboxTx.Status.MINED:
        return
    if key.step in (Step.REFUND, Step.RETURN):
        _refund_recorded(tx, payment_id)
    if key.is_(Step.PAYOUT, detail=False):
        _payment_ended(payment_id, PaymentOutcome.DELIVERED, tx)
    elif key.is_(Step.RETURN, detail=True):
        _payment_ended(payment_id, PaymentOutcome.REFUNDED, tx)


def _payment_ended(payment_id: str, outcome: PaymentOutcome, tx: OutboxTx) -> None:
    """`payment.completed` once the payout to the recipient is mined; `payment.failed` once everything an
    expired payment counted is back with its senders (the last return's hash). Once per payment: the row is
    locked, so two returns mined at once do not both (or neither) see the last one."""
    payment = QuickPayment.objects.select_for_update().filter(pk=payment_id).first()
    if payment is None or payment.organization_id is None:  # anonymous: nobody to tell
        return
    if outcome is PaymentOutcome.REFUNDED:
        counted = QuickPaymentDeposit.objects.filter(payment=payment, counted__gt=0).values_list(
            "deposit_id", flat=True
        )
        keys = [outbox_key(OwnerKind.QUICKPAY, payment.id, Step.RETURN, deposit_id) for deposit_id in counted]
        if not all_mined(keys):  # each return by any of its attempts (chains.collection.attempt)
            return  # another return is still on its way
    _progressed(payment.id, Progress.DELIVERED if outcome is PaymentOutcome.DELIVERED else Progress.RETURNED)
    event_type = PAYMENT_EVENTS[outcome]
    if WebhookEvent.objects.filter(
        organization_id=payment.organization_id, subject=payment.id, event_type=event_type
    ).exists():
        return
    emit_payment(
        organization=payment.organization,
        outcome=outcome,
        payment=_as_payment(
            payment, status="completed" if outcome is PaymentOutcome.DELIVERED else "expired"
        ),
        error="" if outcome is PaymentOutcome.DELIVERED else "expired before it was paid in full",
        refund_tx_hash=tx.tx_hash if outcome is PaymentOutcome.REFUNDED else None,
        subject=payment.id,
    )


def _refund_recorded(tx: OutboxTx, payment_id: str) -> None:
    payment = QuickPayment.objects.filter(pk=payment_id).first()
    entry = (
        Entry.objects.filter(posting__key=f"outbox:{tx.key}:{tx.block_hash}", side=Entry.Side.DEBIT)
        .filter(account__kind=Account.Kind.PAYER)
        .select_related("account")
        .first()
    )
    if payment is None or entry is None or not payment.organization_id:
        return
    balance_payment_refunded(
        PaymentRefunded(
            organization_id=payment.organization_id,
            payment_id=payment.id,
            refund_id=tx.key,
            chain_id=tx.chain_id,
            token_address=entry.account.token,
            amount=int(entry.amount),
            tx_hash=tx.tx_hash,
            posting_keys=[entry.posting.key],
            description=f"returned to the payer of quick payment {payment.id}",
        )
    )


@payable(OwnerKind.QUICKPAY)
def quick_payment_due(identifier: str) -> PaymentDue | None:
    """What a quick payment asks its payer for (the devnet wallet pays it)."""
    payment = QuickPayment.objects.filter(pk=identifier).first()
    if payment is None:
        return None
    return payment.chain_id, payment.token_address, payment.deposit_address, int(payment.amount)
