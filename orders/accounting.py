"""What an order means in the ledger beyond what the chains saw (ledger/observed.py posts deposits, sweeps,
deliveries, refunds and gas from the chains' own record):

- `fee:<order>`: when the order executed, the service's fee moves from the vault's float to the fees earned,
  both held at the vault's address, in the token the payer paid (what arrived times the fee's bps);
- `relay-refund:<chain>:<tx>`: the relay provider gave the vault's deposit back (its fill failed): what its
  refund transaction moved into the vault, per the receipt's ERC-20 `Transfer` logs, from the provider's
  depository (a recipient of the vault's deposit, as the deposit's own posting has it);
- `inventory-fill:<chain>:<tx>`: the relay provider's fill of a refill of the solver's inventory
  (orders/inventory.py), what it moved into the solver, the same way;
- `card:<payment intent>`: a card payment (vendorB) the vendor owes the service, from the payer's card;
  `card-refund:<refund>` gives it back.

Posted in the transaction of the change, by the order's own code; `backfill` posts the same for what was
recorded before the ledger existed (a data migration, with its historical models).
"""

from __future__ import annotations

from django.conf import settings

from chains.keys import OwnerKind, owner_of
from ledger.models import Account
from ledger.postings import Leg, credit, debit, post
from orders import events
from orders.fees import fee_amount

Kind = Account.Kind
CARD_VENDOR = "vendor_b"
CARD_PAYMENT_PREFIX = "pi_"  # a card deposit's "transaction" is its payment intent (orders.lifecycle)


def order_fee(order) -> int:
    """The fee the order earned, in base units of the token the payer paid."""
    received = int((order.settlement or {}).get("srcAmountReceived") or 0)
    return fee_amount(received, int((order.settlement or {}).get("feeBps") or 0))


def fee_legs(order, *, back: bool = False) -> list[Leg]:
    """The fee the order earned, from the vault's float to the fees (`back`: given back, the payment it was
    taken from never arrived)."""
    fee, vault = order_fee(order), settings.VAULT_ADDRESS
    if not fee or not vault:
        return []
    token, chain = order.src_token_address, order.src_chain
    source, target = (Kind.FEES, Kind.VAULT) if back else (Kind.VAULT, Kind.FEES)
    return [credit(chain, token, source, vault, fee), debit(chain, token, target, vault, fee)]


def fee_given_back(order, memo: str) -> None:
    """`fee-reversed:<order>`: the fee `fee:<order>` booked, given back once."""
    legs = fee_legs(order, back=True)
    if legs:
        post(
            key=f"fee-reversed:{order.pk}",
            kind="fee",
            legs=legs,
            order_id=order.pk,
            owner=owner_of(OwnerKind.ORDER, order.pk),
            memo=memo,
        )


def operator_loss_posted(
    order, *, key: str, chain_id: int, token: str, funds: str, loss: str, amount: int, tx_hash: str, memo: str
) -> None:
    """`key` (its kind the key's prefix): `amount` of the operator's funds (`funds`) to the loss account
    (`loss`), once: a delivery or a hold the service paid for a payment that never arrived."""
    post(
        key=key,
        kind=key.split(":", 1)[0],
        legs=[
            credit(chain_id, token, Kind.OPERATOR, funds, amount),
            debit(chain_id, token, Kind.LOSS, loss, amount),
        ],
        order_id=order.pk,
        owner=owner_of(OwnerKind.ORDER, order.pk),
        tx_hash=tx_hash,
        chain_id=chain_id,
        memo=memo,
    )


def card_legs(order, deposit) -> list[Leg]:
    """The card vendor charged the payer: it owes the service the order's price."""
    amount, token = int(deposit.amount), order.src_token_address
    return [
        credit(order.src_chain, token, Kind.PAYER, f"card:{deposit.tx_hash}", amount),
        debit(order.src_chain, token, Kind.CARD, CARD_VENDOR, amount),
    ]


def card_refund_legs(order, refund, intent: str) -> list[Leg]:
    """The card vendor gave a card payment back."""
    amount, token = int(refund.amount), order.src_token_address
    return [
        credit(order.src_chain, token, Kind.CARD, CARD_VENDOR, amount),
        debit(order.src_chain, token, Kind.PAYER, f"card:{intent}", amount),
    ]


TRANSFER_TOPIC = (
    "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"  # Transfer(address,address,uint256)
)


def _address(topic) -> str:
    text = topic if isinstance(topic, str) else "0x" + bytes(topic).hex()
    return "0x" + text[-40:].lower()


def inflow_legs(chain_id: int, logs: list, *, to: str, account: str) -> list[Leg]:
    """What a transaction someone else sent moved into one of the service's addresses (`to`, held as
    `account`): its ERC-20 transfers to that address, each from the sender's side as a recipient of ours."""
    held, legs = to.lower(), []
    for log in logs:
        topics = log.get("topics") or []
        if len(topics) != 3 or _hex(topics[0]) != TRANSFER_TOPIC or _address(topics[2]) != held:
            continue
        amount, token = int(_hex(log["data"]), 16), str(log["address"])
        legs += [
            credit(chain_id, token, Kind.RECIPIENT, _address(topics[1]), amount),
            debit(chain_id, token, account, held, amount),
        ]
    return legs


def _hex(value) -> str:
    return (value if isinstance(value, str) else "0x" + bytes(value).hex()).lower()


def relay_refund_key(chain_id: int, tx_hash: str) -> str:
    return f"relay-refund:{chain_id}:{tx_hash.lower()}"


def inflow_posted(
    *,
    key: str,
    kind: str,
    chain_id: int,
    tx_hash: str,
    receipt,
    to: str,
    account: str,
    owner: str,
    order_id=None,
) -> bool:
    """Post, once under `key`, what `receipt`'s transaction moved into `to`; whether it moved anything."""
    legs = inflow_legs(chain_id, list(receipt["logs"]), to=to, account=account)
    if not legs:
        return False
    post(
        key=key,
        kind=kind,
        legs=legs,
        order_id=order_id,
        owner=owner,
        tx_hash=tx_hash.lower(),
        chain_id=chain_id,
        block_number=receipt["blockNumber"],
    )
    return True


def relay_refund_posted(order, *, chain_id: int, tx_hash: str, receipt) -> bool:
    """Post the provider's refund of `order`'s deposit into the vault once (keyed by its transaction)."""
    return inflow_posted(
        key=relay_refund_key(chain_id, tx_hash),
        kind="refund",
        chain_id=chain_id,
        tx_hash=tx_hash,
        receipt=receipt,
        to=settings.VAULT_ADDRESS,
        account=Kind.VAULT,
        owner=owner_of(OwnerKind.ORDER, order.pk),
        order_id=order.pk,
    )


@events.on(events.Executed, owner=events.ANY)
def _fee_earned(event: events.Executed) -> None:
    order = event.order
    legs = fee_legs(order)
    if legs:
        post(
            key=f"fee:{order.pk}",
            kind="fee",
            legs=legs,
            order_id=order.pk,
            owner=owner_of(OwnerKind.ORDER, order.pk),
        )


def card_payment_posted(order, deposit) -> None:
    post(
        key=f"card:{deposit.tx_hash}",
        kind="card",
        legs=card_legs(order, deposit),
        order_id=order.pk,
        owner=owner_of(OwnerKind.ORDER, order.pk),
        tx_hash=deposit.tx_hash,
    )


def card_refund_posted(order, refund) -> None:
    post(
        key=f"card-refund:{refund.tx_hash}",
        kind="refund",
        legs=card_refund_legs(order, refund, refund.deposit.tx_hash if refund.deposit else ""),
        order_id=order.pk,
        owner=owner_of(OwnerKind.ORDER, order.pk),
        tx_hash=refund.tx_hash,
    )


def backfill(apps, run) -> int:
    """The fees of executed orders and the card payments and refunds recorded before the ledger, posted with
    `run` (a `ledger.backfill.Backfill`) on the migration's historical models."""
    Order = apps.get_model("orders", "Order")
    DepositTx = apps.get_model("orders", "DepositTx")
    RefundTx = apps.get_model("orders", "RefundTx")
    done = 0
    for order in Order.objects.filter(status="executed").iterator():
        legs = fee_legs(order)
        owner = owner_of(OwnerKind.ORDER, order.pk)
        done += run.post(key=f"fee:{order.pk}", kind="fee", legs=legs, order_id=order.pk, owner=owner)
    cards = DepositTx.objects.filter(tx_hash__startswith=CARD_PAYMENT_PREFIX).select_related("order")
    for deposit in cards.iterator():
        order = deposit.order
        done += run.post(
            key=f"card:{deposit.tx_hash}",
            kind="card",
            legs=card_legs(order, deposit),
            order_id=order.pk,
            owner=owner_of(OwnerKind.ORDER, order.pk),
            tx_hash=deposit.tx_hash,
        )
    refunds = RefundTx.objects.filter(deposit__tx_hash__startswith=CARD_PAYMENT_PREFIX, status="success")
    for refund in refunds.select_related("order", "deposit").iterator():
        order = refund.order
        done += run.post(
            key=f"card-refund:{refund.tx_hash}",
            kind="refund",
            legs=card_refund_legs(order, refund, refund.deposit.tx_hash),
            order_id=order.pk,
            owner=owner_of(OwnerKind.ORDER, order.pk),
            tx_hash=refund.tx_hash,
        )
    return done
