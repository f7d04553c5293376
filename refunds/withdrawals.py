"""Withdrawals of an unused refund balance: to an address an admin confirms in the dashboard (a member with a
second factor). The amount leaves the balance when asked (under its row's lock: never more than it holds) and
the vault sends it (`refund:<rbw_id>:withdrawal`); a transfer that fails gives it back to the balance."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from chains.keys import OwnerKind, Signer, Step, outbox_key
from chains.models import OutboxTx
from chains.outbox import outbox_transfer
from chains.payees import payee_refusal
from chains.tokens import token_get
from core.errors import InvalidRequest
from ledger.balance import RefundBalanceWithdrawn, balance_refund_withdrawn
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.models import Organization, Permission
from platform_api.signals import record_write
from refunds.common import may, refund_balance_credit
from refunds.models import RefundBalance, RefundWithdrawal, new_withdrawal_id
from refunds.states import WITHDRAWAL


@transaction.atomic
def refund_balance_withdraw(
    *,
    ctx: RequestContext,
    organization: Organization,
    chain_id: int,
    token_address: str,
    amount: int,
    address: str,
) -> RefundWithdrawal:
    may(ctx, Permission.ADMIN, "Withdrawing from the refund balance")
    token = token_get(chain_id=chain_id, address=token_address)
    if token is None:
        raise InvalidRequest(
            f"{token_address} is not a token this service knows on chain {chain_id}.", field="token"
        )
    if amount <= 0:
        raise InvalidRequest("enter an amount greater than zero.", field="amount")
    if (refusal := payee_refusal(address)) is not None:
        raise InvalidRequest(f"This address {refusal}", field="address")
    row = (
        RefundBalance.objects.select_for_update()
        .filter(organization=organization, chain_id=chain_id, token_address__iexact=token.address)
        .first()
    )
    held = int(row.amount) if row is not None else 0
    if row is None or amount > held:
        raise InvalidRequest(f"is more than the refund balance holds: {held}.", field="amount")
    RefundBalance.objects.filter(pk=row.pk).update(amount=held - amount, updated_at=timezone.now())
    withdrawal = RefundWithdrawal.objects.create(
        id=new_withdrawal_id(),
        organization=organization,
        chain_id=chain_id,
        token_address=token.address,
        amount=amount,
        address=address,
        requested_by=ctx.actor,
    )
    outbox_transfer(
        key=outbox_key(OwnerKind.REFUND, withdrawal.id, Step.WITHDRAWAL),
        chain_id=chain_id,
        signer=Signer.VAULT,
        token=token.address,
        to=address,
        amount=amount,
    )
    record_write(
        ctx=ctx,
        event_type=AuditName.REFUND_BALANCE_WITHDRAWN,
        resource_type="refund_withdrawal",
        resource_id=withdrawal.id,
        created=True,
    )
    return withdrawal


def refund_withdrawal_finished(tx: OutboxTx, withdrawal_id: str) -> None:
    """The vault's transfer was mined (`succeeded`, a negative `refund_balance` balance transaction) or failed
    (`failed`, the amount back in the balance). Once: the row is locked."""
    withdrawal = RefundWithdrawal.objects.select_for_update().filter(pk=withdrawal_id).first()
    if withdrawal is None or withdrawal.status != RefundWithdrawal.Status.PENDING:
        return
    now = timezone.now()
    if tx.status == OutboxTx.Status.MINED:
        WITHDRAWAL.move(
            RefundWithdrawal.objects.filter(pk=withdrawal.pk),
            to=RefundWithdrawal.Status.SUCCEEDED,
            tx_hash=tx.tx_hash,
            updated_at=now,
        )
        balance_refund_withdrawn(
            RefundBalanceWithdrawn(
                organization_id=withdrawal.organization_id,
                withdrawal_id=withdrawal.id,
                chain_id=withdrawal.chain_id,
                token_address=withdrawal.token_address,
                amount=int(withdrawal.amount),
                tx_hash=tx.tx_hash,
            )
        )
        return
    refund_balance_credit(
        organization_id=withdrawal.organization_id,
        chain_id=withdrawal.chain_id,
        token_address=withdrawal.token_address,
        amount=int(withdrawal.amount),
    )
    WITHDRAWAL.move(
        RefundWithdrawal.objects.filter(pk=withdrawal.pk),
        to=RefundWithdrawal.Status.FAILED,
        failure_reason=f"the transfer failed: {tx.error or 'reverted'}; the amount is back in the balance"[
            :500
        ],
        updated_at=now,
    )
