"""What the chains hand the refunds: deposits to a refund's address (confirmed, or withdrawn by a reorg) and
the outcomes of its outbox transactions. Registered with `chains.handlers` when the app is ready."""

from __future__ import annotations

from django.utils import timezone

from chains.handlers import PaymentDue, deposit_handler, outbox_handler, payable
from chains.keys import OwnerKind, Step, owner_id
from chains.models import Deposit, OutboxTx
from ledger.liabilities import liability
from refunds import crosschain  # noqa: F401  subscribes to the orders that deliver refunds elsewhere
from refunds.models import Refund, RefundBalance, RefundTopUp
from refunds.services import (
    TOP_UP_PREFIX,
    enqueue_refund_settlement,
    refund_delivery_failed,
    refund_delivery_finished,
    refund_record_deposit,
    refund_withdraw_deposit,
)
from refunds.top_ups import top_up_record_deposit, top_up_withdraw_deposit
from refunds.withdrawals import refund_withdrawal_finished


@deposit_handler(OwnerKind.REFUND)
def refund_deposit_changed(deposit: Deposit) -> None:
    """Called in the transaction that records the deposit, or withdraws it (or retries either); idempotent."""
    identifier = owner_id(deposit.owner)  # a refund's (re_) or a balance top-up's (rtu_)
    top_up = identifier.startswith(TOP_UP_PREFIX)
    if deposit.status == Deposit.Status.WITHDRAWN:
        (top_up_withdraw_deposit if top_up else refund_withdraw_deposit)(identifier, deposit.pk)
    else:
        (top_up_record_deposit if top_up else refund_record_deposit)(deposit, identifier)
    enqueue_refund_settlement(identifier)


@outbox_handler(OwnerKind.REFUND)
def refund_tx_finished(tx: OutboxTx) -> None:
    """One of a refund's (or a top-up's) transactions was mined or failed: the delivery ends the refund; any
    other settles on."""
    key = tx.parsed_key
    refund_id = key.id
    if key.is_(Step.WITHDRAWAL, detail=False):  # an admin's withdrawal of the refund balance (`rbw_`)
        refund_withdrawal_finished(tx, refund_id)
        return
    if key.is_(Step.DELIVERY, detail=False):
        refund_delivery_finished(tx, refund_id)
    elif key.is_(Step.ORDER, detail=False) and tx.status == OutboxTx.Status.FAILED:
        # the vault could not pay the refund's order
        refund_delivery_failed(refund_id, reason=f"the vault's payment of its order failed: {tx.error}")
    enqueue_refund_settlement(refund_id)


@payable(OwnerKind.REFUND)
def refund_due(identifier: str) -> PaymentDue | None:
    """What a refund awaiting its funding asks the merchant for (the devnet wallet funds it); a refund
    balance's top-up address, open, asks for no amount in particular (0: the payer says how much)."""
    refund = Refund.objects.filter(pk=identifier, status=Refund.Status.REQUIRES_FUNDING).first()
    if refund is None:
        top_up = RefundTopUp.objects.filter(pk=identifier, expires_at__gt=timezone.now()).first()
        if top_up is not None:
            return top_up.chain_id, top_up.token_address, top_up.deposit_address, 0
    if refund is None or not refund.funding_address:
        return None
    due = int(refund.amount) - int(refund.funding_received)
    return refund.chain_id, refund.token_address, refund.funding_address, due


@liability("refund_balance")
def refund_balances_owed(chain_id: int) -> dict[str, int]:
    """What the vault owes merchants on the chain, by token: their refund balances, and the refunds funded from
    them that are not delivered yet (`manage.py reconcile` reports a vault holding less)."""
    owed: dict[str, int] = {}
    balances = RefundBalance.objects.filter(chain_id=chain_id).values_list("token_address", "amount")
    on_their_way = Refund.objects.filter(
        chain_id=chain_id, status=Refund.Status.PENDING, funding_method=Refund.Funding.BALANCE
    ).values_list("token_address", "amount")
    for token, amount in [*balances, *on_their_way]:
        owed[token.lower()] = owed.get(token.lower(), 0) + int(amount)
    return owed
