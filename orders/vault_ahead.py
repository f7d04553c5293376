"""The vault pays the relay provider as soon as the order's sweep is out, not a block later once it is in one.

The sweep of a deposit address and the vault's deposit to the provider are both the vault's transactions on
the origin chain. Once the sweep has its nonce (signed, or broadcast), the deposit, signed after it, takes a
higher one: no block can hold the deposit without the sweep before it, whatever reorg, so what the deposit
draws is in the vault when it executes. The deposit's gas is estimated when it is signed, though, before the
sweep is mined, against what the vault holds then: a deposit the vault could not cover then would fail by its
estimate, and its order with it. So the vault pays ahead only where its balance on the chain now covers this
order's deposit and those of every order already paying the provider from that chain and token whose deposit
is not mined; otherwise the order waits for its sweep's block, as it did (orders.settlement._send_to_vault).

The check and the order's move to the relay step hold the vault's nonce row on the chain (one order at a
time per chain), so two orders settled at once do not both count the same balance. The sweep is checked
again when it is mined (orders.settlement.order_tx_finished), as after a reorg.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from eth_utils import to_checksum_address

from chains.evm import ZERO_ADDRESS
from chains.keys import OwnerKind, Signer, Step, owner_of
from chains.models import OutboxTx, SenderNonce
from chains.readers import ChainUnavailable, RpcChainReader
from orders.models import Order

logger = logging.getLogger("orders.settlement")

OUT = (OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST)


def pays_ahead(order: Order, sweep: OutboxTx, amount: int, move: Callable[[], bool]) -> bool:
    """Move the order on (`move`, its transition to the relay step) if the vault may pay the provider before
    `sweep` is in a block (see the module's docstring); whether it moved."""
    token = order.src_token_address.lower()
    vault = settings.VAULT_ADDRESS
    if sweep.status not in OUT or sweep.signer != Signer.VAULT or not vault or token == ZERO_ADDRESS:
        return False
    with transaction.atomic():
        # One order at a time per chain: the row exists, since the sweep took a nonce from it.
        held = (
            SenderNonce.objects.select_for_update()
            .filter(chain_id=sweep.chain_id, address=to_checksum_address(vault))
            .first()
        )
        if held is None:
            return False
        try:
            balance = RpcChainReader().balance_of(chain_id=sweep.chain_id, token=token, holder=vault)
        except ChainUnavailable:
            return False
        owed = owed_to_provider(sweep.chain_id, token, but=order)
        if balance < owed + amount:
            logger.info(
                "Order %s: the vault holds %s, owes %s to the provider: it pays once the sweep is in a block",
                order.pk,
                balance,
                owed,
            )
            return False
        return move()


def owed_to_provider(chain_id: int, token: str, *, but: Order) -> int:
    """What the vault still has to deposit with the provider on the chain, in the token: the orders paying it
    from there whose deposit is not mined (not yet queued, or in flight), at what each received."""
    paying = Order.objects.filter(
        status=Order.Status.RELAY, src_chain=chain_id, src_token_address__iexact=token
    ).exclude(pk=but.pk)
    mined = set(
        OutboxTx.objects.filter(
            chain_id=chain_id,
            signer=Signer.VAULT,
            step=Step.RELAY,
            status=OutboxTx.Status.MINED,
            owner__in=[owner_of(OwnerKind.ORDER, pk) for pk in paying.values_list("pk", flat=True)],
        ).values_list("owner", flat=True)
    )
    return sum(
        int((settlement or {}).get("srcAmountReceived") or 0)
        for pk, settlement in paying.values_list("pk", "settlement")
        if owner_of(OwnerKind.ORDER, pk) not in mined
    )
