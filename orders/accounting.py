"""What an order means in the ledger beyond what the chains saw (ledger/observed.py posts deposits, sweeps,
deliveries, refunds and gas from the chains' own record):

- `fee:<order>`: when the order executed, the service's fee moves from the vault's float to the fees earned,
  both held at the vault's address, in the token the payer paid (what arrived times the fee's bps);
- `card:<payment intent>`: a card payment (vendorB) the vendor owes the service, from the payer's card;
  `card-refund:<refund>` gives it back.

Posted in the transaction of the change, by the order's own code.
"""

from __future__ import annotations

from django.conf import settings

from ledger.models import Account
from ledger.postings import credit, debit, post
from orders import events
from orders.fees import fee_amount
from orders.models import DepositTx, Order, RefundTx

Kind = Account.Kind
CARD_VENDOR = "vendor_b"


def order_fee(order: Order) -> int:
    """The fee the order earned, in base units of the token the payer paid."""
    received = int((order.settlement or {}).get("srcAmountReceived") or 0)
    return fee_amount(received, int((order.settlement or {}).get("feeBps") or 0))


def _fee_earned(event: events.Executed) -> None:
    order, vault = event.order, settings.VAULT_ADDRESS
    fee = order_fee(order)
    if not fee or not vault:
        return
    token = order.src_token_address
    post(
        key=f"fee:{order.pk}",
        kind="fee",
        legs=[
            credit(order.src_chain, token, Kind.VAULT, vault, fee),
            debit(order.src_chain, token, Kind.FEES, vault, fee),
        ],
        order_id=order.pk,
        owner=f"order:{order.pk}",
    )


def card_payment_posted(order: Order, deposit: DepositTx) -> None:
    """The card vendor charged the payer: it owes the service the order's price."""
    amount = int(deposit.amount)
    post(
        key=f"card:{deposit.tx_hash}",
        kind="card",
        legs=[
            credit(order.src_chain, order.src_token_address, Kind.PAYER, f"card:{deposit.tx_hash}", amount),
            debit(order.src_chain, order.src_token_address, Kind.CARD, CARD_VENDOR, amount),
        ],
        order_id=order.pk,
        owner=f"order:{order.pk}",
        tx_hash=deposit.tx_hash,
    )


def card_refund_posted(order: Order, refund: RefundTx) -> None:
    """The card vendor gave a card payment back."""
    amount = int(refund.amount)
    intent = refund.deposit.tx_hash if refund.deposit else ""
    post(
        key=f"card-refund:{refund.tx_hash}",
        kind="refund",
        legs=[
            credit(order.src_chain, order.src_token_address, Kind.CARD, CARD_VENDOR, amount),
            debit(order.src_chain, order.src_token_address, Kind.PAYER, f"card:{intent}", amount),
        ],
        order_id=order.pk,
        owner=f"order:{order.pk}",
        tx_hash=refund.tx_hash,
    )


def connect() -> None:
    events.subscribe(events.Executed, _fee_earned, owner=events.ANY)
