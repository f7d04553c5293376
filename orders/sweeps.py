"""An order's deposit address swept into the vault, by business key: once for the order's own token
(settlement, and the refunds of what it counted), and once per deposit it did not count."""

from __future__ import annotations

from chains.collection import DepositAddress
from chains.keys import OwnerKind, owner_of
from chains.models import OutboxTx
from orders.models import DepositTx, Order


def order_address(order: Order) -> DepositAddress:
    """The order's deposit address as the collection kernel knows it (chains.collection)."""
    return DepositAddress(
        owner=OwnerKind.ORDER,
        identifier=str(order.pk),
        chain_id=order.src_chain,
        salt_kind="order",
        subject=owner_of(OwnerKind.ORDER, order.pk),
        label=f"order {order.pk}",
    )


def order_sweep(order: Order, deposit: DepositTx | None = None) -> OutboxTx:
    """The factory moves what the order's deposit address holds of a token into the vault.

    The order's own token is swept once for settlement (and for the refunds of
    what it counted); a deposit it did not count gets a sweep of its own, since
    it may arrive after the order's sweep.
    """
    address = order_address(order)
    if deposit is None:
        return address.sweep(order.src_token_address)
    return address.sweep(deposit.token_address or order.src_token_address, deposit.pk)
