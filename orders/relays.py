"""Who delivers an order on its destination chain (RELAY_PROVIDER), and the calls they make there.

`DevnetSolver` stands in for the relay provider between the devnets: the
solver account (anvil's account 9, funded with every devnet token at devnet
start) pays from its own inventory on the destination devnet, through the
transaction outbox: a transfer to the recipient for the swap types; for the
types that call a contract, an allowance for the contract (the relay step)
and then the call itself (the execute step), so the recipient gets the NFT,
the tournament entry or the custom call's outcome.

Each method returns the outbox transaction of its step (asked for once per
order, by business key), or None when the step needs no transaction.
"""

from __future__ import annotations

from typing import Any, Protocol

import requests
from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from eth_utils import to_checksum_address

from chains.artifacts import ERC20, encode_call
from chains.evm import ZERO_ADDRESS
from chains.keys import OwnerKind, Signer, Step, extended, extensions_of, kind_key, outbox_key
from chains.models import OutboxTx
from chains.outbox import outbox_submit, outbox_transfer, succeeded_in_block
from chains.registry import chain_get
from core.http_client import build_session
from orders import fast_fills, relay_outcomes
from orders.delivery import DELIVERED, FAILED, PENDING, Delivery
from orders.fees import fee_amount
from orders.inputs import EXACT_INPUT, EXACT_OUTPUT
from orders.lifecycle import order_record_relay_route
from orders.models import InventoryFront, Order, RelayTx, SolverAllowance
from orders.providers import (
    OfflineQuoteProvider,
    ProviderUnavailable,
    QuoteRejected,
    QuoteRequest,
    RelayQuoteProvider,
    get_quote_provider,
)
from orders.types import SWAP_TYPES, ExecutionInvalid
from orders.types import of as type_of


class Relay(Protocol):
    """What settlement asks of whoever delivers an order on its destination chain: the devnet solver, or the
    relay provider. Both declare it; `get_relay_provider` answers the one the settings choose."""

    name: str  # what the order's settlement records as its `relayProvider`
    executes_calls: bool  # whether its fill makes a contract order's call (else the solver's execute step)

    def check(self, order: Order) -> str | None:
        """Why it cannot deliver the order, or None."""

    def price(self, order: Order, amount_in: int) -> int:
        """What arrives on the destination chain for `amount_in` of what the payer sent, as quoted now."""

    def fronts(self, order: Order) -> bool:
        """Whether it delivers before the deposit is swept into the vault."""

    def deliver(self, order: Order, dst_amount: int) -> Delivery:
        """Deliver (or follow the delivery of) `dst_amount`: pending, delivered or failed."""

    def execute(self, order: Order, dst_amount: int) -> OutboxTx:
        """A contract order's call, made by the service on the destination chain (ExecutionInvalid: not this
        one's to make)."""


class DevnetSolver:
    """Delivery between the devnets from the solver's own inventory (see the module's docstring)."""

    name = "devnet-solver"
    executes_calls = False  # its relay step only gives the contract an allowance; the execute step calls

    def price(self, order: Order, amount_in: int) -> int:
        """What `amount_in` of the source token buys of the destination token (before the service fee)."""
        request = QuoteRequest(
            user=settings.VAULT_ADDRESS,
            recipient=order.recipient_address,
            origin_chain_id=order.src_chain,
            destination_chain_id=order.dst_chain,
            origin_currency=order.src_token_address,
            destination_currency=order.dst_token_address,
            amount=amount_in,
            trade_type=EXACT_INPUT,
        )
        provider = get_quote_provider() if not self._devnets(order) else OfflineQuoteProvider()
        return int(provider.quote(request)["currencyOut"]["amount"])

    @staticmethod
    def _devnets(order: Order) -> bool:
        chains = (chain_get(order.src_chain), chain_get(order.dst_chain))
        return all(chain is not None and chain.devnet for chain in chains)

    @staticmethod
    def fronts(order: Order) -> bool:
        """The solver pays from its own inventory on the destination chain, so it delivers as soon as the
        deposit is confirmed, beside the sweep: the deposit waits at an address only the service can sweep."""
        return True

    def check(self, order: Order) -> str | None:
        """Why this solver cannot deliver the order, or None."""
        if not self._devnets(order):
            return "the devnet solver delivers between devnets only"
        return None

    def deliver(self, order: Order, dst_amount: int) -> Delivery:
        """The relay step: the tokens to the recipient (swaps) or an allowance for the contract."""
        token, recipient = order.dst_token_address, to_checksum_address(order.recipient_address)
        if order.type in SWAP_TYPES:
            tx = outbox_transfer(
                key=outbox_key(OwnerKind.ORDER, order.pk, Step.RELAY),
                chain_id=order.dst_chain,
                signer=Signer.SOLVER,
                token=token,
                to=recipient,
                amount=dst_amount,
            )
            return Delivery.of(tx)
        spender = type_of(order).spender(order)
        if token == ZERO_ADDRESS or spender is None:
            return Delivery(DELIVERED)  # native value travels with the call itself
        spender = to_checksum_address(spender)
        if not self._lease(order, token, spender):
            return Delivery(PENDING)  # another order's call to this contract is spending its allowance
        data = encode_call(ERC20, "approve", spender, dst_amount)
        delivery = Delivery.of(self._send(order, Step.RELAY, to=token, data=data))
        # The allowance is not a delivery to show: the call that spends it is the order's executeTx.
        return Delivery(delivery.state, (), delivery.error)

    @staticmethod
    def _lease(order: Order, token: str, spender: str) -> bool:
        """Hold the solver's allowance for (token, spender) on the destination chain; False if another order does."""
        lease, _ = SolverAllowance.objects.get_or_create(
            chain_id=order.dst_chain, token=token, spender=spender
        )
        free = Q(order__isnull=True) | Q(order=order)
        return (
            SolverAllowance.objects.filter(free, pk=lease.pk).update(order=order, leased_at=timezone.now())
            == 1
        )

    @staticmethod
    def release(order: Order) -> list:
        """The order's call is finished (or will never be made): its allowance may serve the next order.

        Returns the orders that may be waiting for it (contract orders in `relay` on that chain).
        """
        if order.status in (Order.Status.RELAY, Order.Status.EXECUTING):
            return []
        if not SolverAllowance.objects.filter(order=order).update(order=None, leased_at=None):
            return []
        waiting = Order.objects.filter(status=Order.Status.RELAY, dst_chain=order.dst_chain).exclude(
            type__in=SWAP_TYPES
        )
        return list(waiting.order_by("status_changed_at").values_list("pk", flat=True)[:50])

    def execute(self, order: Order, dst_amount: int) -> OutboxTx:
        to, data, value = type_of(order).call(order, dst_amount)
        return self._send(order, Step.EXECUTE, to=to, data=data, value=value)

    @staticmethod
    def _send(order: Order, step: Step, *, to: str, data: str = "0x", value: int = 0) -> OutboxTx:
        return outbox_submit(
            key=outbox_key(OwnerKind.ORDER, order.pk, step),
            chain_id=order.dst_chain,
            signer=Signer.SOLVER,
            to=to,
            data=data,
            value=value,
        )


class RelayProvider:
    """The relay provider's HTTP API (RELAY_API_URL): the vault pays the relay on the origin chain.

    1. `POST /quote/v2` for what the vault holds of the order (what arrived, less
       the service's fee), with the vault as `user` and `refundTo` (without it the
       provider's automatic refunds are off) and the order's recipient; the
       answer is kept in `settlement.relay`, once, under the order's lock;
    2. every transaction of its steps, in order, through the outbox from the
       vault (`order:<id>:relay:<n>`), each once mined before the next. An
       `approve` step is not sent as asked: an exact allowance per order is
       replaced by the next order's before the first deposit spends it, so
       deposits paid together failed (`transferFrom`). The vault gives the
       provider's depository one standing allowance per chain and token
       instead (`relay:allowance:...`, `vault_allowance`), and every deposit
       draws its own amount from it;
    3. `GET /intents/status/v3?requestId=...` until `success` (delivered, its
       destination hashes become relayTxs) or `failure` / `refund`, read with
       their `failReason` and `refundFailReason` (orders/relay_outcomes.py: a
       refund into the vault fails the order and the vault refunds the payer,
       the provider's refund recorded on the origin chain; a deposit the
       provider holds is an incident for staff first; a fill it gave up on is
       looked up with `GET /requests/v3` and counted if it landed after all).
       With RELAY_FAST_FILL the provider is asked to fill as soon as the
       deposit is broadcast (`POST /fast-fill`, orders/fast_fills.py), within
       the origin chain's exposure limits.

    The contract types carry their call to the destination in the quote (`txs`:
    an `approve` of the destination token for the contract that spends it, then
    the call, with `txsGasLimit`; `tradeType: EXACT_OUTPUT` for the price the
    call needs). The provider's multicaller makes the calls in its fill, so the
    fill's destination hash is the order's `executeTx`. `msg.sender` of the
    call is the multicaller, not the buyer: the NFT, tournament entry and fund
    calls name their beneficiary as an argument, and a custom call must too.
    A quote whose price exceeds what the vault holds of the order fails the
    order before any money moves.
    """

    name = "relay"
    # The provider's fill makes a contract order's call (the quote's `txs`): no execute step of our own.
    executes_calls = True

    def __init__(self, base_url: str | None = None, api_key: str | None = None):
        self.base_url = (base_url or settings.RELAY_API_URL).rstrip("/")
        self.api_key = settings.RELAY_API_KEY if api_key is None else api_key
        self.session = build_session(
            retry_methods=frozenset({"GET"})
        )  # a quote request is not retried blindly

    @staticmethod
    def fronts(order: Order) -> bool:
        """The provider delivers only once it is paid, and the vault pays it with what the sweep brought: it
        never fronts an order. The solver's inventory may, beside it (orders.settlement asks orders.inventory)."""
        return False

    def check(self, order: Order) -> str | None:
        if order.type not in SWAP_TYPES and order.dst_token_address == ZERO_ADDRESS:
            return (
                "a contract call paid in the destination chain's native coin is not offered through the relay"
            )
        if not settings.VAULT_ADDRESS:
            return "no vault is configured"
        return None

    def price(self, order: Order, amount_in: int) -> int:
        request = QuoteRequest(
            user=settings.VAULT_ADDRESS,
            recipient=order.recipient_address,
            origin_chain_id=order.src_chain,
            destination_chain_id=order.dst_chain,
            origin_currency=order.src_token_address,
            destination_currency=order.dst_token_address,
            amount=amount_in,
            trade_type=EXACT_INPUT,
            refund_to=settings.VAULT_ADDRESS,
        )
        return int(RelayQuoteProvider(self.base_url, self.api_key).quote(request)["currencyOut"]["amount"])

    def _request(self, method: str, path: str, **kwargs) -> dict:
        headers = {"x-api-key": self.api_key} if self.api_key else {}
        try:
            response = self.session.request(
                method,
                f"{self.base_url}{path}",
                headers=headers,
                allow_redirects=False,
                timeout=settings.PROVIDER_TIMEOUT_SECONDS,
                **kwargs,
            )
            body = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise ProviderUnavailable(f"relay provider: {exc.__class__.__name__}") from exc
        if 400 <= response.status_code < 500 and response.status_code != 429:
            raise QuoteRejected(str(body.get("message") or response.status_code)[:300])
        if response.status_code != 200 or not isinstance(body, dict):
            raise ProviderUnavailable(f"relay provider answered {response.status_code}")
        return body

    def ask_quote(self, body: dict) -> dict:
        """`POST /quote/v2` with `body`, the provider's answer (QuoteRejected for a 4xx, ProviderUnavailable)."""
        return self._request("POST", "/quote/v2", json=body)

    def ask_status(self, request_id: str) -> dict:
        """`GET /intents/status/v3` of one request."""
        return self._request("GET", "/intents/status/v3", params={"requestId": request_id})

    def ask_request(self, request_id: str) -> dict | None:
        """`GET /requests/v3?id=` (the API key required): the provider's record of one request, or None."""
        found = self._request("GET", "/requests/v3", params={"id": request_id}).get("requests") or []
        return next((r for r in found if isinstance(r, dict) and r.get("id") == request_id), None)

    def fast_fill(self, request_id: str) -> dict:
        """`POST /fast-fill {requestId}`: fill now, before the deposit lands (orders/fast_fills.py)."""
        return self._request("POST", "/fast-fill", json={"requestId": request_id})

    def _quote(self, order: Order) -> dict:
        """The relay quote of this order: asked for once, then read from the order."""
        settlement: dict[str, Any] = order.settlement or {}
        if settlement.get("relay"):
            return settlement["relay"]
        received = int(settlement["srcAmountReceived"])
        amount = received - fee_amount(received, int(settlement.get("feeBps") or 0))
        body = {
            "user": settings.VAULT_ADDRESS,
            "recipient": order.recipient_address,
            "originChainId": order.src_chain,
            "destinationChainId": order.dst_chain,
            "originCurrency": order.src_token_address,
            "destinationCurrency": order.dst_token_address,
            "amount": str(amount),
            "tradeType": EXACT_INPUT,
            "refundTo": settings.VAULT_ADDRESS,
        }
        # A contract order's price arrives exactly, and the provider's multicaller makes its calls.
        if order.type not in SWAP_TYPES:
            price = int(settlement["dstAmount"])
            body |= {
                "amount": str(price),
                "tradeType": EXACT_OUTPUT,
                "txs": relay_calls(order, price),
                "txsGasLimit": settings.RELAY_TXS_GAS_LIMIT,
            }
        quote = self.ask_quote(body)
        cost = int(((quote.get("details") or {}).get("currencyIn") or {}).get("amount") or 0)
        # A contract order's price must arrive whole, as the devnet solver delivers it: the vault may pay the
        # provider up to what it received for the order (its fee absorbs a spread within the slippage that
        # quoting allowed), never more.
        if order.type not in SWAP_TYPES and cost > received:
            raise QuoteRejected(f"the call costs {cost} on the origin chain; the order brought {received}")
        relay = quote_steps(quote)
        return order_record_relay_route(order=order, relay=relay)

    def deliver(self, order: Order, dst_amount: int) -> Delivery:
        front = InventoryFront.objects.filter(order=order).select_related("tx").first()
        if front is not None:  # delivered from the solver's inventory (orders/inventory.py)
            in_block = succeeded_in_block(front.tx)
            if in_block is not None:
                # In a block and successful: the recipient holds it now. The outbox follows it to its
                # confirmations (a reorg mines it again at its nonce); the order does not wait for them.
                return Delivery(
                    DELIVERED, ((front.tx.chain_id, in_block, RelayTx.Status.SUCCESS),), ours=True
                )
            return Delivery.of(front.tx)
        try:
            relay = self._quote(order)
        except QuoteRejected as exc:
            return Delivery(FAILED, error=f"the relay provider refused the trade: {exc}")
        except (
            ExecutionInvalid
        ) as exc:  # the call cannot be built: nothing was asked of the provider, nor paid
            return Delivery(FAILED, error=str(exc))
        except ProviderUnavailable:
            return Delivery(PENDING)
        if not relay["requestId"] or not any(step["items"] for step in relay["steps"]):
            return Delivery(FAILED, error="the relay quote has no transaction to send")
        key = outbox_key(OwnerKind.ORDER, order.pk, Step.RELAY)
        paid = pay_steps(relay, key=key)
        if isinstance(paid, str):
            return Delivery(FAILED, error=paid)
        deposit = paid is not None and paid.parsed_key.is_(Step.RELAY, detail=True)  # not the allowance
        fast = fast_fills.follow(self, order, paid, is_deposit=deposit)
        if paid is not None and fast is None:
            return Delivery.of(paid)  # pending, or failed with its hash
        # Every transaction is mined, or the provider was asked to fill before the deposit lands.
        try:
            status = self.ask_status(relay["requestId"])
        except (ProviderUnavailable, QuoteRejected):
            return Delivery(PENDING)
        state = str(status.get("status"))
        hashes = tuple(
            (order.dst_chain, h, str(RelayTx.Status.SUCCESS))
            for h in status.get("txHashes") or []
            if isinstance(h, str)
        )
        failed_deposit = paid is not None and paid.status == OutboxTx.Status.FAILED
        if state == "success":
            if paid is not None and failed_deposit and fast is not None:  # filled; the deposit never landed
                fast_fills.lost(order, fast, paid)
            return Delivery(DELIVERED, hashes)
        if paid is not None and fast is not None and failed_deposit:
            # Asked to fast fill, and the deposit failed: the payer is refunded only once the provider says it
            # did not fill (and will not: an accepted fast fill is awaited); nothing left the vault.
            gave_up = state in ("failure", "refund", "refunded") or (state == "waiting" and not fast.accepted)
            return Delivery.of(paid) if gave_up else Delivery(PENDING)
        if state in ("failure", "refund", "refunded"):
            return relay_outcomes.not_filled(self, order, status, hashes)
        return Delivery(PENDING)

    def execute(self, order: Order, dst_amount: int) -> OutboxTx:
        raise ExecutionInvalid(
            "the relay provider's fill makes the call"
        )  # settlement reads its fill instead


def quote_steps(quote: dict) -> dict:
    """What the service keeps of the provider's quote: the transactions of its steps, its request id, and what
    it will deliver."""
    steps = [
        {
            "requestId": step.get("requestId"),
            "items": [
                item["data"]
                for item in step.get("items", [])
                if step.get("kind", "transaction") == "transaction"
            ],
        }
        for step in quote.get("steps", [])
    ]
    return {
        "steps": steps,
        "requestId": next((s["requestId"] for s in steps if s["requestId"]), None),
        "currencyOut": (quote.get("details") or {}).get("currencyOut"),
    }


def pay_steps(relay: dict, *, key: str) -> OutboxTx | str | None:
    """Send the quote's transactions from the vault, in order, each once mined before the next (`<key>:<n>`):
    None when every one is mined, the first that is not (in flight, or failed), or why the quote is refused
    (an `approve` for a spender that is not the pinned depository; the vault's standing allowance stands in
    for the one that is)."""
    items = [item for step in relay["steps"] for item in step["items"]]
    for n, item in enumerate(items):
        if (approval := _approval(item)) is not None:
            chain_id = int(item["chainId"])
            if settings.RELAY_DEPOSITORIES.get(chain_id) != approval.lower():
                return (
                    f"the quote asks the vault to approve {approval}, which is not the relay provider's "
                    f"depository on chain {chain_id} (RELAY_DEPOSITORIES)"
                )
            tx = vault_allowance(chain_id=chain_id, token=item["to"], spender=approval)
            if tx.status != OutboxTx.Status.MINED:
                return tx  # pending; a failed one fails this payment, the next tries again
            continue
        tx = outbox_submit(
            key=extended(key, n),
            chain_id=int(item["chainId"]),
            signer=Signer.VAULT,
            to=item["to"],
            data=item.get("data") or "0x",
            value=int(item.get("value") or 0),
        )
        if tx.status != OutboxTx.Status.MINED:
            return tx
    return None


def relay_calls(order: Order, price: int) -> list[dict[str, str]]:
    """The quote's `txs` for a contract order: the destination token approved for its spender, then the call."""
    to, data, value = type_of(order).call(order, price)
    calls = []
    spender = type_of(order).spender(order)
    if spender is not None:
        approve = encode_call(ERC20, "approve", to_checksum_address(spender), price)
        calls.append({"to": to_checksum_address(order.dst_token_address), "value": "0", "data": approve})
    calls.append({"to": to_checksum_address(to), "value": str(value), "data": data})
    return calls


APPROVE_SELECTOR = "0x095ea7b3"  # approve(address,uint256)
STANDING_ALLOWANCE = 2**256 - 1


def _approval(item: dict) -> str | None:
    """The spender, if the quote's transaction is an ERC-20 `approve` (whatever amount it names)."""
    data = str(item.get("data") or "").lower()
    if not data.startswith(APPROVE_SELECTOR) or len(data) < 10 + 64:
        return None
    return to_checksum_address("0x" + data[10 + 24 : 10 + 64])


def vault_allowance(*, chain_id: int, token: str, spender: str) -> OutboxTx:
    """The vault's standing allowance of `token` for the provider's depository `spender` on `chain_id`: asked
    for once (a failed one is asked for again, under the next attempt's key), shared by every order's deposit.
    Only for the depository the operator pinned (RELAY_DEPOSITORIES): the caller checks the quote's spender.

    The depository pulls only from its caller, in the caller's own deposit call (its deposit methods, as the
    provider documents them), so a standing allowance lets nothing but the vault's own deposits move the
    vault's tokens; exact allowances per order raced (each replaced the last before its deposit was mined).
    """
    base = kind_key(OwnerKind.RELAY, Step.ALLOWANCE, chain_id, token.lower(), spender.lower())
    return standing_allowance(base, chain_id=chain_id, signer=Signer.VAULT, token=token, spender=spender)


def standing_allowance(base: str, *, chain_id: int, signer: str, token: str, spender: str) -> OutboxTx:
    """`signer`'s unlimited allowance of `token` for `spender`, asked of the outbox once under `base:<attempt>`
    (a failed attempt is asked for again under the next)."""
    attempt = OutboxTx.objects.filter(
        key__startswith=extensions_of(base), status=OutboxTx.Status.FAILED
    ).count()
    return outbox_submit(
        key=extended(base, attempt),
        chain_id=chain_id,
        signer=signer,
        to=to_checksum_address(token),
        data=encode_call(ERC20, "approve", to_checksum_address(spender), STANDING_ALLOWANCE),
    )


def get_relay_provider() -> Relay:
    return RelayProvider() if settings.RELAY_PROVIDER == "relay" else DevnetSolver()
