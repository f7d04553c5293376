"""An order's deposit address swept into the vault, by business key: once for the order's own token
(settlement, and the refunds of what it counted), and once per deposit it did not count."""

from __future__ import annotations

from chains.keys import OwnerKind, Step, outbox_key
from chains.models import OutboxTx
from chains.outbox import outbox_sweep
from orders.models import DepositTx, Order


def order_sweep(order: Order, deposit: DepositTx | None = None) -> OutboxTx:
    """The factory moves what the order's deposit address holds of a token into the vault.

    The order's own token is swept once for settlement (and for the refunds of
    what it counted); a deposit it did not count gets a sweep of its own, since
    it may arrive after the order's sweep.
    """
    token = order.src_token_address if deposit is None else deposit.token_address or order.src_token_address
    key = (
        outbox_key(OwnerKind.ORDER, order.pk, Step.SWEEP)
        if deposit is None
        else outbox_key(OwnerKind.ORDER, order.pk, Step.SWEEP, deposit.pk)
    )
    return outbox_sweep(
        key=key, chain_id=order.src_chain, kind="order", identifier=str(order.pk), token=token
    )
