"""The relay provider (Relay) stood in for between chains the test or rehearsal runs, as its documentation
describes it. One implementation serves the suite (through pytest-httpserver, tests/orders/relay_standin.py) and
`make rehearsal` / `make soak` (as a process: `python tools/relay_standin.py --help`).

- `POST /quote/v2` (https://docs.relay.link/references/api/get-quote-v2): the body's `user`, `recipient`,
  `originChainId`, `destinationChainId`, `originCurrency`, `destinationCurrency`, `amount`, `tradeType`,
  `refundTo`, and for calls on the destination `txs` (`{to, value, data}` each) with `txsGasLimit`. The answer's
  `steps` are what the user signs, each `{id, action, description, kind: "transaction", requestId, items:
  [{status: "incomplete", data: {from, to, data, value, chainId}, check: {endpoint, method}}]}`: for an ERC-20,
  an `approve` step for the depository when the user's allowance is short of the amount, then the `deposit`
  step, `depositErc20(depositor, token, amount, id)` on the depository; for the native coin one step,
  `depositNative(depositor, id)` with the amount as its value
  (https://docs.relay.link/references/protocol/depository/architecture: the depository pulls an ERC-20 with
  `transferFrom`); `details.currencyIn` / `currencyOut` / `timeEstimate`, and `protocol.v2.orderId` with its
  `paymentDetails` (https://docs.relay.link/references/protocol/depository/guides/integrating). A quote the
  provider would not give is a 400 `{message, errorCode}` (`INVALID_INPUT`, `AMOUNT_TOO_LOW`,
  `UNSUPPORTED_CHAIN`, `SWAP_IMPACT_TOO_HIGH` for calls that revert in simulation) (https://docs.relay.link/
  references/api/api_core_concepts/errors).
- Calls on the destination: the quote's `txs` are made by the provider's multicaller in the fill's
  transaction, `msg.sender` being the multicaller, not the buyer (https://docs.relay.link/references/api/
  api_guides/calling-integration-guide): here `RelayMulticaller.fill(token, amount, calls)`, deployed on every
  chain. The multicaller is handed the output and the calls spend it, so an ERC-20 call needs an `approve`
  first, as the guide says.
- `GET /intents/status/v3?requestId=` (https://docs.relay.link/references/api/get-intents-status-v3) with the
  provider's statuses: `waiting` (no deposit yet), `depositing` (the deposit is on the origin chain, not yet
  `confirmations` blocks deep), `pending` (seen, the fill not sent), `delayed` (held longer than expected),
  `submitted` (the fill sent on the destination, not mined), `success` (`txHashes`: the fill, `inTxHashes`: the
  deposit), `refund` (the fill reverted: the deposit goes back to `refundTo` on the origin chain, that
  transaction in `txHashes`) and `failure` (the fill reverted and the quote had no `refundTo`: the provider's
  automatic refunds are off, https://docs.relay.link/references/api/api_core_concepts/refunds).
- `failReason` and `refundFailReason` on the status (https://docs.relay.link/changelog, 2026-08: "N/A" on
  non-failure statuses, the reason or "UNKNOWN" on `failure` and `refund`), from the provider's enum
  (https://docs.relay.link/references/api/api_core_concepts/execution-errors): a fill that reverts is
  `TRANSACTION_REVERTED`; `refuse_fills` names a reason the provider refunds without filling
  (`SOLVER_BALANCE_TOO_LOW`, `DOUBLE_SPEND`); `refund_fail_reason` a refund leg that fails, the deposit staying
  at the depository (`MANUAL_REFUND_REQUIRED`: "requires manual intervention"); `not_included` a fill broadcast
  and not included in time (`TRANSACTION_NOT_INCLUDED`, its hash recorded as `data.failedTxHash`: "the
  transaction may still confirm afterwards", which `late_inclusion` makes it do).
- `GET /requests/v3?id=` (https://docs.relay.link/references/api/api_guides/migrating-to-requests-v3): the
  `x-api-key` header required; `{requests: [{id, status, user, sender, recipient, refundTo, requestType,
  features, data: {failReason, refundFailReason (null, not "N/A"), failedTxHash, triggeredByFastFill, inTxs,
  outTxs: [{txHash, chainId}]}, createdAt, updatedAt}], continuation}`.
- `POST /fast-fill` (https://docs.relay.link/features/fast-fill, /references/api/fast-fill): `{requestId,
  maxFillAmountUsd?}` with the API key, after the origin transaction is submitted and before it lands: the
  request is filled at once and a hold of its amount is placed against the app's balance (`app_balance`),
  released when the deposit lands; a fill over `maxFillAmountUsd` or the balance left is refused (400); one
  already filled answers 200 as the provider does ("queued or found to be already executed"). A deposit that
  never lands leaves the hold a permanent debit.
- Webhooks (https://docs.relay.link/references/api/api_guides/webhooks): each status change of a request is
  posted to the webhook URL as `{event: "request.status.updated", timestamp, data: {requestId, status,
  inTxHashes, txHashes, updatedAt, originChainId, destinationChainId}}`, signed with HMAC-SHA256 of
  `${timestamp}.${body}` keyed by the API key, the hex digest in `X-Signature-SHA256` and the timestamp (ms) in
  `X-Signature-Timestamp`.

The stand-in's solver is an unlocked account of each node (anvil's account 8, or `--solver-account`): it deploys the depository
(and is its allocator) and the multicaller on every chain, fills from its own inventory of the destination
token, and refunds from the depository. Amounts are at par (the rehearsal's tokens are one asset on each
chain). A real provider fills on its own time: `advance_all` (a thread, in the process) moves every request as
far as the chains allow; the suite's stand-in also moves a request when its status is asked.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import random
import secrets
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests
from web3 import Web3

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "chains" / "contracts" / "artifacts"
NATIVE = "0x" + "00" * 20
SOLVER_ACCOUNT = 8
REQUIRED = (
    "user",
    "recipient",
    "originChainId",
    "destinationChainId",
    "originCurrency",
    "destinationCurrency",
    "amount",
    "tradeType",
)
FINAL = ("success", "refund", "failure")


def _artifact(name: str) -> dict:
    return json.loads((ARTIFACTS / f"{name}.json").read_text())


def _hex(value) -> str:
    return value if isinstance(value, str) else "0x" + bytes(value).hex()


@dataclass
class Request:
    body: dict
    amount: int
    calls: list = field(default_factory=list)
    status: str = "waiting"
    deposit_tx: str | None = None
    deposit_block: int | None = None
    seen_at: float | None = None
    quoted_at: float = field(default_factory=time.time)  # wall clock, for the rehearsal's timings
    filled_at: float | None = None
    fill_tx: str | None = None
    refund_tx: str | None = None
    failed_tx: str | None = None  # a fill broadcast and not included in time (TRANSACTION_NOT_INCLUDED)
    fail_reason: str = ""
    refund_fail_reason: str = ""
    fast_filled: bool = False
    asked: int = 0  # how many times its status was asked (a test waits for the service to stop asking)

    @property
    def origin(self) -> int:
        return int(self.body["originChainId"])

    @property
    def destination(self) -> int:
        return int(self.body["destinationChainId"])


@dataclass
class RelayStandIn:
    chains: dict  # chain id -> web3 of a node of that chain
    webhook_url: str = ""
    api_key: str = ""
    confirmations: int = 0  # blocks over the deposit's before it is filled (`depositing` until then)
    solver_account: int = SOLVER_ACCOUNT  # which unlocked account of each node is the provider's solver
    delayed_after: float = 10.0  # a held request is `delayed` once it waited this long
    fail_fills: bool = False  # every fill reverts (and is refunded)
    held: bool = (  # deposits are seen but not filled (`pending`, then `delayed`): a test fills with `fill`, and
        False  # the status says nothing of that fill until `held` is False again
    )
    refuse_calls: str = ""  # a quote with calls answers 400 with this (a call that reverts in simulation)
    approve_spender: str = ""  # a rogue answer: the approve step names this spender, not the depository
    claims_fills: bool = False  # answers `success` with a fill hash that is on no chain
    refuse_fills: str = (
        ""  # the provider fills nothing and refunds with this failReason (SOLVER_BALANCE_TOO_LOW)
    )
    refund_fail_reason: str = ""  # a failed fill's refund leg fails with this: `failure`, the deposit held
    not_included: bool = False  # the fill is reported TRANSACTION_NOT_INCLUDED (`failure`, no refund)
    late_inclusion: bool = False  # ...and it was sent and lands after all
    app_balance: int | None = None  # what fast fills may hold at once (in the tokens' units); None: no limit
    quotes: list = field(default_factory=list)
    requests: dict = field(default_factory=dict)
    webhooks: list = field(default_factory=list)  # (status code or error, event) of every delivery sent

    def __post_init__(self):
        self.lock = threading.RLock()
        self.token_abi = _artifact("TestToken")["abi"]
        self.depositories, self.multicallers, self.solvers = {}, {}, {}
        self.deposits: dict[str, tuple[str, int, int]] = {}  # request id -> (tx hash, amount, block)
        self.scanned: dict[int, int] = {}
        self.fills_by_recipient: dict[str, list[str]] = defaultdict(list)
        self.approved: set[tuple[int, str]] = set()
        self.holds: dict[str, int] = {}  # request id -> amount a fast fill holds until its deposit lands
        self.fast_fill_asks: list[dict] = []
        for chain_id, w3 in self.chains.items():
            solver = w3.eth.accounts[self.solver_account]
            self.solvers[chain_id] = solver
            self.depositories[chain_id] = _deploy(w3, "RelayDepository", solver, sender=solver)
            self.multicallers[chain_id] = _deploy(w3, "RelayMulticaller", sender=solver)
            self.scanned[chain_id] = w3.eth.block_number

    # --- POST /quote/v2 --------------------------------------------------------------------------------

    def quote(self, body: dict) -> tuple[int, dict]:
        missing = [name for name in REQUIRED if name not in body]
        if missing:
            return 400, {"message": f"missing {', '.join(missing)}", "errorCode": "INVALID_INPUT"}
        origin, destination = int(body["originChainId"]), int(body["destinationChainId"])
        if origin not in self.chains or destination not in self.chains:
            return 400, {"message": "Unsupported chain", "errorCode": "UNSUPPORTED_CHAIN"}
        amount = int(body["amount"])
        if self.refuse_calls and body.get("txs"):
            return 400, {"message": self.refuse_calls, "errorCode": "SWAP_IMPACT_TOO_HIGH"}
        if amount <= 0:
            return 400, {"message": "Amount is too low", "errorCode": "AMOUNT_TOO_LOW"}
        w3 = self.chains[origin]
        request_id = "0x" + secrets.token_hex(32)
        user, token = w3.to_checksum_address(body["user"]), w3.to_checksum_address(body["originCurrency"])
        depository = self.depositories[origin]
        tag = bytes.fromhex(request_id[2:])
        steps = []
        if token == NATIVE:
            deposit = depository.encode_abi("depositNative", [user, tag])
            steps.append(_step("deposit", request_id, user, depository.address, deposit, amount))
        else:
            erc20 = w3.eth.contract(address=token, abi=self.token_abi)
            if self.approve_spender or erc20.functions.allowance(user, depository.address).call() < amount:
                spender = w3.to_checksum_address(self.approve_spender or depository.address)
                approve = erc20.encode_abi("approve", [spender, amount])
                steps.append(_step("approve", request_id, user, token, approve))
            deposit = depository.encode_abi("depositErc20", [user, token, amount, tag])
            steps.append(_step("deposit", request_id, user, depository.address, deposit))
        for step in steps:
            step["items"][0]["data"]["chainId"] = origin  # the origin chain's transactions
        calls = [(c["to"], int(c.get("value") or 0), c.get("data") or "0x") for c in body.get("txs") or []]
        with self.lock:
            self.quotes.append(body)
            self.requests[request_id] = Request(body=body, amount=amount, calls=calls)
        decimals = 18 if token == NATIVE else 6
        currency = {"amount": str(amount), "currency": {"decimals": decimals}}
        return 200, {
            "steps": steps,
            "fees": {},
            "details": {"currencyIn": currency, "currencyOut": currency, "timeEstimate": 2},
            "protocol": {
                "v2": {
                    "orderId": request_id,
                    "paymentDetails": {
                        "chainId": str(origin),
                        "depository": depository.address,
                        "currency": token,
                        "amount": str(amount),
                    },
                }
            },
        }

    # --- GET /intents/status/v3 -------------------------------------------------------------------------

    def status(self, request_id: str, *, advance: bool = True) -> dict:
        with self.lock:
            found = self.requests.get(request_id)
            if found is None:
                return {"status": "waiting"}
            found.asked += 1
            if advance:
                self._scan(found.origin)
                self._advance(request_id, found)
            return self._shown(request_id, found)

    def advance_all(self) -> None:
        """Move every open request as far as the chains allow: what the provider does on its own time."""
        with self.lock:
            open_ = [(i, r) for i, r in self.requests.items() if r.status not in FINAL]
            for chain_id in {r.origin for _, r in open_}:
                self._scan(chain_id)
            for request_id, found in open_:
                self._advance(request_id, found)

    def _shown(self, request_id: str, found: Request) -> dict:
        hashes = {"success": [found.fill_tx], "refund": [found.refund_tx], "failure": [found.fill_tx]}
        failed = found.status in ("failure", "refund")
        return {
            "status": found.status,
            "failReason": (found.fail_reason or "UNKNOWN") if failed else "N/A",
            "refundFailReason": found.refund_fail_reason or "N/A",
            "inTxHashes": [found.deposit_tx] if found.deposit_tx else [],
            "txHashes": [h for h in hashes.get(found.status, []) if h],
            "originChainId": found.origin,
            "destinationChainId": found.destination,
            "requestId": request_id,
            "updatedAt": int(time.time() * 1000),
        }

    def _scan(self, chain_id: int) -> None:
        """The depository's deposits on one chain since the last scan, by the request id they carry."""
        w3, depository = self.chains[chain_id], self.depositories[chain_id]
        latest = w3.eth.block_number
        start = self.scanned[chain_id] + 1
        if start > latest:
            return
        for event in (depository.events.RelayErc20Deposit, depository.events.RelayNativeDeposit):
            for log in event().get_logs(from_block=start, to_block=latest):
                request_id = _hex(log["args"]["id"])
                self.deposits.setdefault(
                    request_id, (_hex(log["transactionHash"]), int(log["args"]["amount"]), log["blockNumber"])
                )
                self.holds.pop(request_id, None)  # the deposit landed: a fast fill's hold is released
        self.scanned[chain_id] = latest

    def _advance(self, request_id: str, found: Request) -> None:
        before = found.status
        found.status = self._next(request_id, found)
        if found.status != before and self.webhook_url:
            event = {"event": "request.status.updated", "timestamp": int(time.time() * 1000)}
            event["data"] = self._shown(request_id, found)
            threading.Thread(target=self._post, args=(event,), daemon=True).start()

    def _deposited(self, request_id: str, found: Request) -> None:
        """Record the request's deposit once the depository's logs show it, whatever its status: a request
        fast filled before its deposit landed is final already, and its deposit is still the provider's."""
        if found.deposit_tx is None:
            deposit = self.deposits.get(request_id)
            if deposit is not None and deposit[1] >= found.amount:
                found.deposit_tx, _, found.deposit_block = deposit
                found.seen_at = found.seen_at or time.monotonic()

    def _next(self, request_id: str, found: Request) -> str:
        self._deposited(request_id, found)
        if found.status in FINAL:
            return found.status
        if found.fast_filled:  # filled before the deposit landed: the fill's own outcome is the status
            receipt = _receipt(self.chains[found.destination], found.fill_tx or "")
            return "submitted" if receipt is None else "success" if receipt["status"] == 1 else "failure"
        if found.deposit_tx is None:
            return "waiting"
        if self.chains[found.origin].eth.block_number - found.deposit_block < self.confirmations:
            return "depositing"
        if self.refuse_fills:  # the provider does not fill (its solver is short, the deposit spent twice...)
            found.fail_reason = self.refuse_fills
            return self._refunded(found)
        if self.not_included:  # broadcast, never included in Relay's window; it may land afterwards
            found.fail_reason = "TRANSACTION_NOT_INCLUDED"
            found.failed_tx = found.failed_tx or (
                self._fill(found) if self.late_inclusion else "0x" + secrets.token_hex(32)
            )
            return "failure"
        if self.claims_fills:  # a provider's word the destination chain does not bear out
            found.fill_tx = found.fill_tx or "0x" + secrets.token_hex(32)
            return "success"
        if self.held:  # not a word of the fill until the test lets the provider speak (`held = False`)
            return "delayed" if time.monotonic() - found.seen_at > self.delayed_after else "pending"
        if found.fill_tx is None:
            found.fill_tx = self._fill(found)
        receipt = _receipt(self.chains[found.destination], found.fill_tx)
        if receipt is None:
            return "submitted"
        if receipt["status"] == 1:
            return "success"
        found.fail_reason = "TRANSACTION_REVERTED"
        return self._refunded(found)

    def _refunded(self, found: Request) -> str:
        """A fill that did not happen: the deposit back to `refundTo` on the origin chain (`refund`), or held
        at the depository (`failure`) without `refundTo` or when the refund leg fails."""
        refund_to = found.body.get("refundTo")
        if self.refund_fail_reason:
            found.refund_fail_reason = self.refund_fail_reason
            return "failure"
        if not refund_to:
            return "failure"
        if found.refund_tx is None:
            w3 = self.chains[found.origin]
            found.refund_tx = _hex(
                self.depositories[found.origin]
                .functions.refund(
                    w3.to_checksum_address(found.body["originCurrency"]),
                    w3.to_checksum_address(refund_to),
                    found.amount,
                )
                .transact({"from": self.solvers[found.origin]})
            )
        return "refund"

    def _fill(self, found: Request) -> str:
        """The fill on the destination chain, from the solver's inventory; through the multicaller with calls."""
        w3, chain_id = self.chains[found.destination], found.destination
        token = w3.to_checksum_address(found.body["destinationCurrency"])
        recipient = w3.to_checksum_address(found.body["recipient"])
        solver, multicaller = self.solvers[chain_id], self.multicallers[chain_id]
        erc20 = w3.eth.contract(address=token, abi=self.token_abi)
        amount = found.amount
        if self.fail_fills:  # a fill that fails on chain: more than the solver holds (a provider's revert)
            amount = (
                w3.eth.get_balance(solver) if token == NATIVE else erc20.functions.balanceOf(solver).call()
            ) + 1
        gas = int(found.body.get("txsGasLimit") or 0) + 150_000
        if found.calls:  # the multicaller takes the output and makes the calls, in the fill's one transaction
            if token == NATIVE:
                tx = multicaller.functions.fill(token, amount, found.calls).transact(
                    {"from": solver, "gas": gas, "value": amount}
                )
            else:
                if (chain_id, token) not in self.approved:
                    w3.eth.wait_for_transaction_receipt(
                        erc20.functions.approve(multicaller.address, 2**256 - 1).transact({"from": solver})
                    )
                    self.approved.add((chain_id, token))
                tx = multicaller.functions.fill(token, amount, found.calls).transact(
                    {"from": solver, "gas": gas}
                )
        elif token == NATIVE:
            tx = w3.eth.send_transaction({"from": solver, "to": recipient, "value": amount, "gas": 60_000})
        else:
            tx = erc20.functions.transfer(recipient, amount).transact({"from": solver, "gas": 100_000})
        fill = _hex(tx)
        found.filled_at = time.time()
        self.fills_by_recipient[recipient.lower()].append(fill)
        return fill

    def _post(self, event: dict) -> None:
        raw = json.dumps(event, separators=(",", ":")).encode()
        timestamp = str(event["timestamp"])
        signature = hmac.new(
            self.api_key.encode(), timestamp.encode() + b"." + raw, hashlib.sha256
        ).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-Signature-SHA256": signature,
            "X-Signature-Timestamp": timestamp,
        }
        try:
            outcome: object = requests.post(
                self.webhook_url, data=raw, headers=headers, timeout=10
            ).status_code
        except requests.RequestException as exc:
            outcome = type(exc).__name__
        with self.lock:
            self.webhooks.append((outcome, event))

    # --- POST /fast-fill, GET /requests/v3 ----------------------------------------------------------------

    def fast_fill(self, body: dict) -> tuple[int, dict]:
        """Fill the request now, before its deposit lands, holding its amount against the app's balance."""
        request_id = str(body.get("requestId") or "")
        with self.lock:
            self.fast_fill_asks.append(body)
            found = self.requests.get(request_id)
            if found is None:
                return 400, {"message": "Request not found", "errorCode": "INVALID_INPUT"}
            if found.fill_tx or found.status in FINAL:
                return 200, {"message": "Request was found to be already executed."}
            native = found.body["destinationCurrency"].lower() == NATIVE
            usd = found.amount / (10**18 if native else 10**6)  # at par: the tokens are one asset
            cap = body.get("maxFillAmountUsd")
            if cap is not None and usd > float(cap):
                return 400, {
                    "message": f"the fill is worth {usd} USD, over maxFillAmountUsd",
                    "errorCode": "INVALID_INPUT",
                }
            if self.app_balance is not None and sum(self.holds.values()) + found.amount > self.app_balance:
                return 400, {
                    "message": "Insufficient app balance for this fast fill",
                    "errorCode": "INSUFFICIENT_FUNDS",
                }
            if request_id not in self.deposits:
                self.holds[request_id] = found.amount
            found.fast_filled = True
            found.fill_tx = self._fill(found)
            found.seen_at = found.seen_at or time.monotonic()
            return 200, {"message": "Request successfully queued for fast fill."}

    def requests_v3(self, query: dict) -> dict:
        """`GET /requests/v3` by `id` (or every request): the v3 shape, `null` where v2 said "N/A"."""
        with self.lock:
            wanted = query.get("id", [None])[0]
            rows = [(i, r) for i, r in self.requests.items() if wanted in (None, i)]
            return {"requests": [self._v3(i, r) for i, r in rows], "continuation": None}

    def _v3(self, request_id: str, found: Request) -> dict:
        shown = self._shown(request_id, found)
        outs = [h for h in (found.fill_tx, found.refund_tx) if h]
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(found.quoted_at))
        return {
            "id": request_id,
            "status": found.status,
            "user": found.body["user"],
            "sender": found.body["user"],
            "recipient": found.body["recipient"],
            "refundTo": found.body.get("refundTo"),
            "requestType": "Call" if found.calls else "Crosschain Swap",
            "features": ["fast_fill"] if found.fast_filled else [],
            "data": {
                "failReason": None if shown["failReason"] == "N/A" else shown["failReason"],
                "refundFailReason": found.refund_fail_reason or None,
                "failedTxHash": found.failed_tx,
                "triggeredByFastFill": True if found.fast_filled else None,
                "inTxs": [{"txHash": found.deposit_tx, "chainId": found.origin}] if found.deposit_tx else [],
                "outTxs": [
                    {"txHash": h, "chainId": found.origin if h == found.refund_tx else found.destination}
                    for h in outs
                ],
            },
            "createdAt": created,
            "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    # --- what a test asks ----------------------------------------------------------------------------------

    def fill(self, request_id: str) -> str:
        """Fill a request now, as the provider does once it has seen the deposit (the test's held requests)."""
        with self.lock:
            found = self.requests[request_id]
            found.fill_tx = found.fill_tx or self._fill(found)
            return found.fill_tx

    def deposited(self) -> list[str]:
        with self.lock:
            for chain_id in self.chains:
                self._scan(chain_id)
            return [request_id for request_id in self.requests if request_id in self.deposits]

    def fills(self) -> list[str]:
        return [r.fill_tx for r in self.requests.values() if r.fill_tx]

    def summary(self, found: Request) -> dict:
        return {
            "origin": found.origin,
            "destination": found.destination,
            "amount": found.amount,
            "native": found.body["originCurrency"].lower() == NATIVE,
            "recipient": found.body["recipient"],
            "calls": len(found.calls),
            "status": found.status,
            "deposit_tx": found.deposit_tx,
            "fill_tx": found.fill_tx,
            "refund_tx": found.refund_tx,
            "quoted_at": found.quoted_at,
            "filled_at": found.filled_at,
        }

    def addresses(self) -> dict:
        return {
            "depositories": {str(c): d.address for c, d in self.depositories.items()},
            "multicallers": {str(c): m.address for c, m in self.multicallers.items()},
            "solvers": {str(c): s for c, s in self.solvers.items()},
        }

    # --- HTTP ------------------------------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: str, body: bytes, api_key: str = "") -> tuple[int, dict]:
        keyed = path in ("/fast-fill", "/requests/v3")
        if keyed and self.api_key and not hmac.compare_digest(api_key, self.api_key):
            return 401, {"message": "Unauthorized: x-api-key is required", "errorCode": "UNAUTHORIZED"}
        if method == "POST" and path == "/fast-fill":
            try:
                return self.fast_fill(json.loads(body or b"{}"))
            except (ValueError, AttributeError):
                return 400, {"message": "the body is not a JSON object", "errorCode": "INVALID_INPUT"}
        if method == "GET" and path == "/requests/v3":
            return 200, self.requests_v3(parse_qs(query))
        if method == "POST" and path in ("/quote", "/quote/v2"):
            try:
                parsed = json.loads(body or b"{}")
            except ValueError:
                return 400, {"message": "the body is not JSON", "errorCode": "INVALID_INPUT"}
            return self.quote(parsed)
        if method == "GET" and path == "/intents/status/v3":
            return 200, self.status(parse_qs(query).get("requestId", [""])[0])
        return 404, {"message": "not found"}


def _deploy(w3, name: str, *args, sender: str):
    compiled = _artifact(name)
    contract = w3.eth.contract(abi=compiled["abi"], bytecode=compiled["bytecode"])
    receipt = w3.eth.wait_for_transaction_receipt(
        contract.constructor(*args).transact({"from": sender}), timeout=60
    )
    if receipt.status != 1:
        raise RuntimeError(f"deploying {name} failed")
    return w3.eth.contract(address=receipt.contractAddress, abi=compiled["abi"])


def _step(step_id: str, request_id: str, user: str, to: str, data: str, value: int = 0) -> dict:
    return {
        "id": step_id,
        "action": "Confirm transaction in your wallet",
        "description": "Approve the depository" if step_id == "approve" else "Deposit to the depository",
        "kind": "transaction",
        "requestId": request_id,
        "items": [
            {
                "status": "incomplete",
                "data": {"from": user, "to": to, "data": data, "value": str(value), "chainId": None},
                "check": {"endpoint": f"/intents/status/v3?requestId={request_id}", "method": "GET"},
            }
        ],
    }


def _receipt(w3, tx_hash: str):
    try:
        return w3.eth.get_transaction_receipt(tx_hash)
    except Exception:  # not mined yet
        return None


# --- the process (make rehearsal, make soak) ------------------------------------------------------------------


def serve(standin: RelayStandIn, port: int, *, fault_rate: float = 0.0, fault_delay: float = 0.0) -> None:
    """Answer the provider's API on `port`; with a fault rate, that share of calls fails: half answer 503 before
    doing anything, half do their work and answer only after `fault_delay` seconds (past the caller's time-out),
    as a provider that is overloaded or whose answer is lost. `GET /__stats` counts calls, faults and fills."""
    counts: Counter = Counter()

    def answer(method: str, raw_path: str, body: bytes, api_key: str = "") -> tuple[int, dict]:
        parts = urlsplit(raw_path)
        if parts.path == "/__stats":
            with standin.lock:
                for chain_id in standin.chains:  # deposits that landed after their request was fast filled
                    standin._scan(chain_id)
                for request_id, found in standin.requests.items():
                    standin._deposited(request_id, found)
                return 200, {
                    "calls": dict(counts),
                    "fills": dict(standin.fills_by_recipient),
                    "requests": {i: standin.summary(r) for i, r in standin.requests.items()},
                    "webhooks": dict(Counter(str(outcome) for outcome, _ in standin.webhooks)),
                }
        fault = random.random() < fault_rate  # noqa: S311 - a fault injector, not a secret
        counts["calls"] += 1
        if fault and random.random() < 0.5:  # noqa: S311
            counts["503"] += 1
            return 503, {"message": "overloaded (an injected fault)"}
        try:
            status, reply = standin.handle(method, parts.path, parts.query, body, api_key)
        except Exception as exc:  # a stand-in's failure: the service must see a 5xx, not a hang
            return 502, {"message": str(exc)[:200]}
        if fault:
            counts["late"] += 1
            time.sleep(fault_delay)  # the work is done; the answer arrives after the caller gave up
        return status, reply

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, method: str) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0))) if method == "POST" else b""
            status, reply = answer(method, self.path, body, self.headers.get("x-api-key", ""))
            raw = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # a late answer: the caller gave up waiting
                self.wfile.write(raw)

        def do_POST(self):
            self._reply("POST")

        def do_GET(self):
            self._reply("GET")

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rpc", action="append", required=True, help="CHAIN_ID=URL of a node, once per chain"
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--addresses", required=True, help="file to write the deployed contracts' addresses to"
    )
    parser.add_argument("--webhook-url", default="")
    parser.add_argument("--api-key", default="")
    parser.add_argument("--confirmations", type=int, default=0)
    parser.add_argument("--solver-account", type=int, default=SOLVER_ACCOUNT)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--fault-delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    chains = {}
    for each in args.rpc:
        chain_id, url = each.split("=", 1)
        chains[int(chain_id)] = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 30}))
    standin = RelayStandIn(
        chains=chains,
        webhook_url=args.webhook_url,
        api_key=args.api_key,
        confirmations=args.confirmations,
        solver_account=args.solver_account,
    )
    Path(args.addresses).write_text(json.dumps(standin.addresses()))

    def provider_loop() -> None:
        while True:
            with contextlib.suppress(Exception):  # a node restarting: the next round tries again
                standin.advance_all()
            time.sleep(0.25)

    threading.Thread(target=provider_loop, daemon=True).start()
    serve(standin, args.port, fault_rate=args.fault_rate, fault_delay=args.fault_delay)


if __name__ == "__main__":
    main(sys.argv[1:])
