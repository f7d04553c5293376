"""Refunds: create one (the rules: what is left of the payment, the destination, the funding), count what funds
it, cancel and expire the unfunded, and record how its delivery ended. Each change is one transaction with
its webhook event and, for the transaction it refunds, the refunded amount.

A refund holds part of its payment's amount from the moment it is created until it is canceled or its
delivery fails: the payment's row is locked while what is left is computed, so concurrent refunds of one
payment never add up to more than it (PostgreSQL row lock; SQLite takes its write lock when the
transaction begins).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from chains.families import deposit_address
from chains.incidents import incident_record
from chains.keys import OwnerKind, Step, outbox_key
from chains.models import Deposit, Incident, OutboxTx
from chains.registry import chain_get
from chains.tokens import token_get
from chains.watcher import watch_address
from checkout.models import Transaction
from checkout.receipts import merchant_refund_email_queue, merchant_refund_receipt
from core.errors import Conflict, ErrorCode, InvalidRequest, NotFound
from core.tasks import Later
from ledger.balance import MerchantRefunded, balance_merchant_refunded
from platform_api import testmode
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.models import Organization, Permission
from platform_api.signals import record_write
from quickpay.models import QuickPayment
from refunds.common import REFUND_OWNER, may, refund_balance_credit
from refunds.models import Refund, RefundBalance, RefundDeposit, new_refund_id
from refunds.routes import route_check
from refunds.selectors import payment_of
from refunds.serializers import (
    RefundSerializer,
)  # imported when the app is ready: its events' bodies documented
from refunds.states import REFUND
from webhooks.events import EventType, emit_event
from webhooks.models import WebhookEvent

SETTLE_REFUND = Later("refunds.tasks.settle_refund")

TOP_UP_PREFIX = "rtu_"  # a refund balance top-up's id: its address and keys are `refund:<rtu_id>...` too
Status = Refund.Status


@dataclass(frozen=True)
class Paid:
    """What a refund needs to know of the payment it refunds, whichever kind it is."""

    id: str
    refundable: bool  # completed (a transaction) or paid (a quick payment)
    amount: int  # what the merchant was paid, in their token
    chain_id: int
    token_address: str
    payer: str  # the address the payer paid from ("" when unknown)
    payer_chain_id: int
    payer_token_address: str


def _paid(organization: Organization, payment_id: str, *, lock: bool) -> Paid:
    """The organization's payment `payment_id`, its row locked with `lock`; 404 for any other. A quick payment
    named by its transaction is the quick payment."""
    payment_id = payment_of(organization, payment_id)
    if payment_id.startswith("txn_"):
        rows = Transaction.objects.filter(organization=organization, pk=payment_id)
        txn = (rows.select_for_update() if lock else rows).first()
        if txn is not None:
            return Paid(
                id=txn.id,
                refundable=txn.status == Transaction.Status.COMPLETED,
                amount=int(txn.amount),
                chain_id=txn.chain_id,
                token_address=txn.token_address,
                payer=txn.from_address,
                payer_chain_id=txn.source_chain_id,
                payer_token_address=txn.source_token_address,
            )
    elif payment_id.startswith("qp_"):
        payments = QuickPayment.objects.filter(organization=organization, pk=payment_id)
        payment = (payments.select_for_update() if lock else payments).first()
        if payment is not None:
            return Paid(
                id=payment.id,
                refundable=payment.status == QuickPayment.Status.PAID,
                amount=int(payment.amount),
                chain_id=payment.chain_id,
                token_address=payment.token_address,
                payer=payment.payer_address,
                payer_chain_id=payment.chain_id,
                payer_token_address=payment.token_address,
            )
    raise NotFound(f"No transaction with id '{payment_id}'.", field="transaction")


def refund_held(payment_id: str) -> int:
    """What the payment's refunds hold of its amount (all but the canceled and the failed)."""
    amounts = Refund.objects.filter(payment_id=payment_id, status__in=Refund.HOLDING).values_list(
        "amount", flat=True
    )
    return sum(int(amount) for amount in amounts)


def _destination(paid: Paid, given: dict[str, Any] | None) -> tuple[int, str, str]:
    """(chain id, token, address) the payer receives the refund at: `given`, or where they paid from."""
    given = given or {}
    chain_id = given.get("chain_id", paid.payer_chain_id)
    token_address = given.get("token_address", paid.payer_token_address)
    address = given.get("address") or paid.payer
    if chain_get(chain_id) is None:
        raise InvalidRequest(
            f"chain {chain_id} is not a chain this service knows.", field="destination.chain_id"
        )
    token = token_get(chain_id=chain_id, address=token_address)
    if token is None:
        raise InvalidRequest(
            f"{token_address} is not a token this service knows on chain {chain_id}.",
            field="destination.token_address",
        )
    if not address:
        raise InvalidRequest(
            "the payer's address is unknown (a contract's internal payment): say where the refund goes.",
            field="destination.address",
            code=ErrorCode.REQUIRED,
        )
    return chain_id, token.address, address


def refund_data(refund: Refund) -> dict[str, Any]:
    """The refund object: the API's answer, and the `data` of every `refund.*` event."""
    return dict(RefundSerializer(refund).data)


def _emit(refund: Refund, event_type: EventType) -> WebhookEvent | None:
    return emit_event(
        organization=refund.organization, event_type=event_type, data=refund_data(refund), subject=refund.id
    )


def _payment_refunded(payment_id: str) -> None:
    """The transaction's `amount_refunded` (its pending and succeeded refunds) and `refunds` (every id); a quick
    payment's is the transaction that records it."""
    rows = Transaction.objects.filter(Q(pk=payment_id) | Q(quick_payment_id=payment_id))
    refunds = list(
        Refund.objects.filter(payment_id=payment_id).order_by("created_at").values("id", "amount", "status")
    )
    refunded = sum(int(r["amount"]) for r in refunds if r["status"] in (Status.PENDING, Status.SUCCEEDED))
    rows.update(amount_refunded=refunded, refund_ids=[r["id"] for r in refunds], updated_at=timezone.now())


def _change(refund: Refund, event_type: EventType, **fields: Any) -> WebhookEvent | None:
    """Save `fields` on the (locked) refund, tell the merchant, bring its transaction up to date; the event."""
    if "status" in fields:
        REFUND.enter(refund, fields["status"])  # the declared machine (refunds.states) lists every move
    for name, value in fields.items():
        setattr(refund, name, value)
    refund.updated_at = timezone.now()
    refund.save(update_fields=[*fields, "updated_at"])
    event = _emit(refund, event_type)
    _payment_refunded(refund.payment_id)
    return event


def refund_create(*, ctx: RequestContext, organization: Organization, data: dict[str, Any]) -> Refund:
    """A refund of the organization's payment `data["transaction"]`: funded at once from the refund balance
    when it covers the amount, else awaiting a deposit to its own address for REFUND_FUNDING_SECONDS. A
    destination on another chain or in another token is quoted first (no lock is held while the provider
    answers), and refused (400 naming `destination`) where the service cannot deliver."""
    may(ctx, Permission.WRITE, "Refunding a payment")
    paid = _paid(organization, data["transaction"], lock=False)
    chain_id, token_address, address = _destination(paid, data.get("destination"))
    testmode.ensure_test_chains(organization, {"destination": chain_id})
    quoted = None
    if (chain_id, token_address.lower()) != (paid.chain_id, paid.token_address.lower()):
        quoted = route_check(
            chain_id=paid.chain_id,
            token=paid.token_address,
            amount=data.get("amount") or max(1, paid.amount - refund_held(paid.id)),
            dst_chain=chain_id,
            dst_token=token_address,
            to=address,
        )
    with transaction.atomic():
        return _refund_create(ctx, organization, data, (chain_id, token_address, address), quoted)


def _refund_create(
    ctx: RequestContext,
    organization: Organization,
    data: dict[str, Any],
    destination: tuple[int, str, str],
    quoted: int | None,
) -> Refund:
    paid = _paid(organization, data["transaction"], lock=True)
    if not paid.refundable:
        raise InvalidRequest(
            f"transaction {paid.id} is not completed: only a completed payment can be refunded.",
            field="transaction",
        )
    left = paid.amount - refund_held(paid.id)
    amount = data.get("amount", left)
    if left <= 0:
        raise InvalidRequest(
            f"nothing is left to refund of {paid.id}: it is refunded in full.", field="amount"
        )
    if amount > left:
        raise InvalidRequest(
            f"is more than what is left to refund of {paid.id}: {left} of {paid.amount}.", field="amount"
        )
    chain_id, token_address, address = destination
    refund_id, now = new_refund_id(), timezone.now()
    refund = Refund(
        id=refund_id,
        organization=organization,
        payment_id=paid.id,
        amount=amount,
        chain_id=paid.chain_id,
        token_address=paid.token_address,
        reason=data.get("reason", ""),
        metadata=data.get("metadata", {}),
        destination_chain_id=chain_id,
        destination_token_address=token_address,
        destination_address=address,
        # The same chain and token: delivered as it is; else what the payer receives is known once quoted.
        destination_amount=amount
        if (chain_id, token_address.lower()) == (paid.chain_id, paid.token_address.lower())
        else None,
        destination_quoted=quoted,
        created_at=now,
        updated_at=now,
    )
    if _take_from_balance(organization, paid.chain_id, paid.token_address, amount):
        refund.funding_method = Refund.Funding.BALANCE
        REFUND.enter(refund, Status.PENDING)
    else:
        refund.funding_method = Refund.Funding.DEPOSIT
        refund.funding_address = deposit_address(
            chain_id=paid.chain_id, kind=REFUND_OWNER, identifier=refund_id, field="transaction"
        )
        refund.expires_at = now + timedelta(seconds=settings.REFUND_FUNDING_SECONDS)
        watch_address(
            chain_id=paid.chain_id,
            address=refund.funding_address,
            owner=refund.owner,
            watch_until=refund.expires_at + timedelta(days=1),  # a late deposit is seen, and sent back
        )
    refund.save(force_insert=True)
    _emit(refund, EventType.REFUND_CREATED)
    _payment_refunded(paid.id)
    record_write(
        ctx=ctx,
        event_type=AuditName.REFUND_CREATED,
        resource_type="refund",
        resource_id=refund.id,
        created=True,
    )
    if refund.status == Status.PENDING:
        enqueue_refund_settlement(refund.id)
    return refund


def _take_from_balance(organization: Organization, chain_id: int, token_address: str, amount: int) -> bool:
    row = (
        RefundBalance.objects.select_for_update()
        .filter(organization=organization, chain_id=chain_id, token_address__iexact=token_address)
        .first()
    )
    if row is None or int(row.amount) < amount:
        return False
    RefundBalance.objects.filter(pk=row.pk).update(amount=int(row.amount) - amount, updated_at=timezone.now())
    return True


def _locked(refund_id: str) -> Refund | None:
    return Refund.objects.select_for_update().select_related("organization").filter(pk=refund_id).first()


@transaction.atomic
def refund_cancel(*, ctx: RequestContext, refund: Refund) -> Refund:
    """Cancel a refund still awaiting its funding; what part of it arrived goes back to its senders."""
    may(ctx, Permission.WRITE, "Canceling a refund")
    locked = _locked(refund.id)
    assert locked is not None
    if locked.status != Status.REQUIRES_FUNDING:
        raise Conflict(
            f"refund {locked.id} is {locked.status}: only a refund awaiting funding can be canceled."
        )
    _change(locked, EventType.REFUND_UPDATED, status=Status.CANCELED)
    record_write(ctx=ctx, event_type=AuditName.REFUND_CANCELED, resource_type="refund", resource_id=locked.id)
    enqueue_refund_settlement(locked.id)
    return locked


def refunds_expire(*, now: datetime | None = None) -> int:
    """Cancel the refunds whose funding did not arrive in time; each in its own transaction."""
    due = Refund.objects.filter(status=Status.REQUIRES_FUNDING, expires_at__lte=now or timezone.now())
    expired = 0
    for refund_id in list(due.values_list("pk", flat=True)[:500]):
        with transaction.atomic():
            refund = _locked(refund_id)
            if refund is None or refund.status != Status.REQUIRES_FUNDING:
                continue
            _change(
                refund,
                EventType.REFUND_UPDATED,
                status=Status.CANCELED,
                failure_reason="its funding did not arrive before it expired",
            )
            enqueue_refund_settlement(refund.id)
            expired += 1
    return expired


def refund_record_deposit(deposit: Deposit, refund_id: str) -> None:
    """Count a confirmed deposit to the refund's address toward its funding (the handler's transaction, once
    per deposit): only its token, only while it awaits funding, up to its amount; the rest goes back."""
    refund = _locked(refund_id)
    if refund is None or RefundDeposit.objects.filter(deposit_id=deposit.pk).exists():
        return
    amount = int(deposit.amount)
    counts = (
        refund.status == Status.REQUIRES_FUNDING and deposit.token.lower() == refund.token_address.lower()
    )
    owed = max(0, int(refund.amount) - int(refund.funding_received))
    counted = min(amount, owed) if counts else 0
    RefundDeposit.objects.create(refund=refund, deposit=deposit, counted=counted, returned=amount - counted)
    if not counted:
        return
    received = int(refund.funding_received) + counted
    hashes = [
        *refund.tx_hashes,
        {"chain_id": deposit.chain_id, "tx_hash": deposit.tx_hash, "kind": "funding"},
    ]
    if received < int(refund.amount):
        refund.funding_received, refund.tx_hashes = received, hashes
        refund.save(update_fields=["funding_received", "tx_hashes"])
        return
    _change(
        refund, EventType.REFUND_UPDATED, funding_received=received, tx_hashes=hashes, status=Status.PENDING
    )


@transaction.atomic
def refund_withdraw_deposit(refund_id: str, deposit_id: int) -> None:
    """A reorg took a deposit to the refund's address off the chain for good: while the refund still awaits its
    funding and nothing was sent for the deposit, it stops counting; otherwise staff look (an incident)."""
    refund = _locked(refund_id)
    item = RefundDeposit.objects.filter(refund_id=refund_id, deposit_id=deposit_id).first()
    if refund is None or item is None or not (int(item.counted) or int(item.returned)):
        return
    counted = int(item.counted)
    RefundDeposit.objects.filter(pk=item.pk).update(counted=0, returned=0)
    sent = OutboxTx.objects.filter(
        key__in=[
            outbox_key(OwnerKind.REFUND, refund_id, Step.RETURN, deposit_id),
            outbox_key(OwnerKind.REFUND, refund_id, Step.UNFUNDED, deposit_id),
        ]
    ).exists()
    if refund.status == Status.REQUIRES_FUNDING and not sent:
        refund.funding_received = int(refund.funding_received) - counted
        refund.save(update_fields=["funding_received"])
        return
    incident_record(
        kind=Incident.Kind.DEPOSIT_REORGED,
        subject=refund.owner,
        chain_id=refund.chain_id,
        summary=f"refund {refund_id} ({refund.status}): a deposit that funded it or was going back was taken off "
        "the chain by a reorg; nothing more is sent for it until staff resolve this",
        details={"deposit": deposit_id, "counted": str(counted)},
    )


def refund_delivered(refund_id: str, *, chain_id: int, tx_hash: str, delivered: int | None = None) -> None:
    """The payer holds the refund (`delivered` of the destination token, in `tx_hash` on `chain_id`):
    `succeeded`, and the merchant's balance transaction. Once per refund: the row is locked."""
    refund = _locked(refund_id)
    if refund is None or refund.status != Status.PENDING:
        return
    hashes = [*refund.tx_hashes, {"chain_id": chain_id, "tx_hash": tx_hash, "kind": "delivery"}]
    event = _change(
        refund,
        EventType.REFUND_SUCCEEDED,
        status=Status.SUCCEEDED,
        tx_hashes=hashes,
        destination_amount=refund.destination_amount if delivered is None else delivered,
    )
    if refund.payment_id.startswith("txn_"):  # the payer of a checkout: its receipt shows it, its email tells
        merchant_refund_receipt(
            transaction_id=refund.payment_id,
            refund_id=refund.id,
            amount=int(refund.destination_amount or 0),
            chain_id=chain_id,
            token_address=refund.destination_token_address,
            to=refund.destination_address,
            tx_hash=tx_hash,
        )
        merchant_refund_email_queue(
            transaction_id=refund.payment_id,
            amount=int(refund.destination_amount or 0),
            chain_id=chain_id,
            token_address=refund.destination_token_address,
            to=refund.destination_address,
            tx_hash=tx_hash,
            event=event,
        )
    balance_merchant_refunded(
        MerchantRefunded(
            organization_id=refund.organization_id,
            payment_id=refund.payment_id,
            refund_id=refund.id,
            chain_id=refund.chain_id,
            token_address=refund.token_address,
            amount=int(refund.amount),
            tx_hashes=[(h["kind"], h["chain_id"], h["tx_hash"]) for h in hashes],
            description=f"refund {refund.id} of {refund.payment_id}",
        )
    )


def refund_delivery_failed(refund_id: str, *, reason: str) -> None:
    """The delivery failed and the refund's amount is in the vault: `failed`, and the amount is credited to
    the organization's refund balance (never lost; the next refund in that token takes it)."""
    refund = _locked(refund_id)
    if refund is None or refund.status != Status.PENDING:
        return
    refund_balance_credit(
        organization_id=refund.organization_id,
        chain_id=refund.chain_id,
        token_address=refund.token_address,
        amount=int(refund.amount),
    )
    message = f"the delivery failed: {reason or 'reverted'}; its amount is in the refund balance"
    _change(refund, EventType.REFUND_FAILED, status=Status.FAILED, failure_reason=message[:500])


def refund_delivery_finished(tx: OutboxTx, refund_id: str) -> None:
    """The vault's transfer to the payer (same chain and token) was mined or failed."""
    if tx.status == OutboxTx.Status.MINED:
        refund_delivered(refund_id, chain_id=tx.chain_id, tx_hash=tx.tx_hash)
    else:
        refund_delivery_failed(refund_id, reason=f"on chain: {tx.error or 'reverted'}")


def enqueue_refund_settlement(refund_id: str) -> None:
    transaction.on_commit(lambda: SETTLE_REFUND.delay(refund_id))


def refund_top_up_create(
    *, ctx: RequestContext, organization: Organization, chain_id: int, token_address: str
):
    """A deposit address that tops the organization's refund balance up (refunds.top_ups)."""
    from refunds.top_ups import top_up_create

    may(ctx, Permission.WRITE, "Topping the refund balance up")
    return top_up_create(organization=organization, chain_id=chain_id, token_address=token_address)


def refund_balance_withdraw(
    *,
    ctx: RequestContext,
    organization: Organization,
    chain_id: int,
    token_address: str,
    amount: int,
    address: str,
):
    """Send `amount` of the refund balance to `address` (refunds.withdrawals)."""
    from refunds.withdrawals import refund_balance_withdraw as withdraw

    return withdraw(
        ctx=ctx,
        organization=organization,
        chain_id=chain_id,
        token_address=token_address,
        amount=amount,
        address=address,
    )
