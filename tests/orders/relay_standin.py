"""The relay provider (Relay), stood in for on the test's two devnets, as its documentation describes it.

- `POST /quote/v2` (https://docs.relay.link/references/api/get-quote-v2): the body's `user`, `recipient`,
  `originChainId`, `destinationChainId`, `originCurrency`, `destinationCurrency`, `amount`, `tradeType` and
  `refundTo`. The answer's `steps` are what the user signs, each `{id, action, description, kind:
  "transaction", requestId, items: [{status: "incomplete", data: {from, to, data, value, chainId}}]}`: for
  an ERC-20, an `approve` step for the depository when the user's allowance is short of the amount, then
  the `deposit` step, `depositErc20(depositor, token, amount, id)` on the depository
  (https://docs.relay.link/references/protocol/depository/architecture: the depository pulls the amount
  with `transferFrom`); `details.currencyIn` / `currencyOut`, and `protocol.v2.orderId` with its
  `paymentDetails` (https://docs.relay.link/references/protocol/depository/guides/integrating).
- Calls on the destination: the quote's `txs` (`{to, value, data}` each, with `txsGasLimit`; `tradeType:
  EXACT_OUTPUT` when the calls need an exact amount) are made by the provider's multicaller in the fill's
  transaction, `msg.sender` being the multicaller (https://docs.relay.link/references/api/api_guides/
  calling-integration-guide): here `RelayMulticaller.fill(token, amount, calls)`, deployed on the destination.
- `GET /intents/status/v3?requestId=` (https://docs.relay.link/references/api/get-intents-status-v3):
  `waiting` until the depository's `RelayErc20Deposit` with the request's id is on the origin chain; then
  the fill, from the stand-in solver's own inventory on the *destination* chain, `pending` until it is
  mined; `success` with `txHashes` (the fill) and `inTxHashes` (the deposit). A fill that reverts is
  `refund`: the deposit goes back to `refundTo` on the origin chain, and that transaction is in `txHashes`.

The depository is `chains/contracts/src/dev/RelayDepository.sol`, deployed on the origin devnet by the
stand-in's solver (anvil's account 8), which is also its allocator.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass, field

from werkzeug import Response

from chains.artifacts import artifact, encode_call
from chains.devnet import deploy_contract

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


@dataclass
class Request:
    body: dict
    amount: int
    calls: list = field(default_factory=list)
    deposit_tx: str | None = None
    fill_tx: str | None = None
    refund_tx: str | None = None


@dataclass
class RelayStandIn:
    origin: object  # web3 of the origin devnet
    destination: object  # web3 of the destination devnet
    quotes: list = field(default_factory=list)
    requests: dict = field(default_factory=dict)
    fail_fills: bool = False  # every fill reverts (and is refunded)
    held: bool = False  # deposits are seen but the status stays `pending` (a fill the test makes with `fill`)
    refuse_calls: str = ""  # a quote with calls answers 400 with this (a call that reverts in simulation)
    approve_spender: str = ""  # a rogue answer: the approve step names this spender, not the depository

    def __post_init__(self):
        self.solver = self.origin.eth.accounts[SOLVER_ACCOUNT]
        self.depository = deploy_contract(self.origin, "RelayDepository", self.solver, sender=self.solver)
        destination_solver = self.destination.eth.accounts[SOLVER_ACCOUNT]
        self.multicaller = deploy_contract(self.destination, "RelayMulticaller", sender=destination_solver)
        self.lock = threading.Lock()
        self.token_abi = artifact("TestToken")["abi"]

    def serve(self, httpserver) -> RelayStandIn:
        httpserver.expect_request("/quote/v2", method="POST").respond_with_handler(self._quote)
        httpserver.expect_request("/intents/status/v3", method="GET").respond_with_handler(self._status)
        return self

    # --- POST /quote/v2 --------------------------------------------------------------------------------

    def _quote(self, request) -> Response:
        body = request.get_json()
        missing = [name for name in REQUIRED if name not in body]
        if missing:
            return _json({"message": f"missing {', '.join(missing)}", "errorCode": "INVALID_INPUT"}, 400)
        amount = int(body["amount"])
        if self.refuse_calls and body.get("txs"):
            return _json({"message": self.refuse_calls, "errorCode": "SWAP_IMPACT_TOO_HIGH"}, 400)
        if amount <= 0:
            return _json({"message": "Amount is too low", "errorCode": "AMOUNT_TOO_LOW"}, 400)
        request_id = "0x" + secrets.token_hex(32)
        user, token = body["user"], self.origin.to_checksum_address(body["originCurrency"])
        erc20 = self.origin.eth.contract(address=token, abi=self.token_abi)
        steps = []
        if self.approve_spender or erc20.functions.allowance(user, self.depository.address).call() < amount:
            spender = self.approve_spender or self.depository.address
            steps.append(
                _step(
                    "approve", request_id, user, token, encode_call("TestToken", "approve", spender, amount)
                )
            )
        deposit = encode_call(
            "RelayDepository", "depositErc20", user, token, amount, bytes.fromhex(request_id[2:])
        )
        steps.append(_step("deposit", request_id, user, self.depository.address, deposit))
        for step in steps:
            step["items"][0]["data"]["chainId"] = body["originChainId"]  # the origin chain's transactions
        calls = [(c["to"], int(c.get("value") or 0), c.get("data") or "0x") for c in body.get("txs") or []]
        with self.lock:
            self.quotes.append(body)
            self.requests[request_id] = Request(body=body, amount=amount, calls=calls)
        currency = {"amount": str(amount), "currency": {"decimals": 6}}
        return _json(
            {
                "steps": steps,
                "fees": {},
                "details": {"currencyIn": currency, "currencyOut": currency, "timeEstimate": 2},
                "protocol": {
                    "v2": {
                        "orderId": request_id,
                        "paymentDetails": {
                            "chainId": str(body["originChainId"]),
                            "depository": self.depository.address,
                            "currency": token,
                            "amount": str(amount),
                        },
                    }
                },
            }
        )

    # --- GET /intents/status/v3 -------------------------------------------------------------------------

    def _status(self, request) -> Response:
        request_id = request.args.get("requestId", "")
        with self.lock:
            found = self.requests.get(request_id)
            if found is None:
                return _json({"status": "waiting"})
            return _json(self._advance(request_id, found))

    def _advance(self, request_id: str, found: Request) -> dict:
        body = found.body
        chains = {"originChainId": body["originChainId"], "destinationChainId": body["destinationChainId"]}
        if found.deposit_tx is None:
            found.deposit_tx = self._deposit_of(request_id, found.amount)
            if found.deposit_tx is None:
                return {"status": "waiting", **chains}
        if self.held:
            return {"status": "pending", "inTxHashes": [found.deposit_tx], "txHashes": [], **chains}
        if found.fill_tx is None:
            found.fill_tx = self._fill(body, found.amount, found.calls)
        receipt = _receipt(self.destination, found.fill_tx)
        if receipt is None:
            return {"status": "pending", "inTxHashes": [found.deposit_tx], "txHashes": [], **chains}
        if receipt["status"] == 1:
            return {
                "status": "success",
                "inTxHashes": [found.deposit_tx],
                "txHashes": [found.fill_tx],
                **chains,
            }
        if found.refund_tx is None:
            found.refund_tx = self.depository.functions.refund(
                self.origin.to_checksum_address(body["originCurrency"]),
                self.origin.to_checksum_address(body["refundTo"]),
                found.amount,
            ).transact({"from": self.solver})
            found.refund_tx = "0x" + bytes(found.refund_tx).hex()
        return {"status": "refund", "inTxHashes": [found.deposit_tx], "txHashes": [found.refund_tx], **chains}

    def _deposit_of(self, request_id: str, amount: int) -> str | None:
        """The origin chain's deposit tagged with the request's id, of the amount quoted, if mined."""
        logs = self.depository.events.RelayErc20Deposit().get_logs(from_block=0)
        for log in logs:
            if "0x" + bytes(log["args"]["id"]).hex() == request_id and int(log["args"]["amount"]) >= amount:
                return "0x" + bytes(log["transactionHash"]).hex()
        return None

    def _fill(self, body: dict, amount: int, calls: list) -> str:
        token = self.destination.to_checksum_address(body["destinationCurrency"])
        recipient = self.destination.to_checksum_address(body["recipient"])
        erc20 = self.destination.eth.contract(address=token, abi=self.token_abi)
        solver = self.destination.eth.accounts[SOLVER_ACCOUNT]
        # A fill that fails on chain: more than the solver holds (a real provider's revert, reproduced).
        value = amount if not self.fail_fills else erc20.functions.balanceOf(solver).call() + 1
        if calls:  # the multicaller takes the output and makes the calls, in the fill's one transaction
            if erc20.functions.allowance(solver, self.multicaller.address).call() < value:
                self.destination.eth.wait_for_transaction_receipt(
                    erc20.functions.approve(self.multicaller.address, 2**256 - 1).transact({"from": solver})
                )
            gas = int(body.get("txsGasLimit") or 1_000_000) + 100_000
            tx = self.multicaller.functions.fill(token, value, calls).transact({"from": solver, "gas": gas})
        else:
            tx = erc20.functions.transfer(recipient, value).transact({"from": solver, "gas": 100_000})
        return "0x" + bytes(tx).hex()

    def fill(self, request_id: str) -> str:
        """Fill a request now, as the provider does once it has seen the deposit (the test's held requests)."""
        with self.lock:
            found = self.requests[request_id]
            found.fill_tx = found.fill_tx or self._fill(found.body, found.amount, found.calls)
            return found.fill_tx

    def deposited(self) -> list[str]:
        return [request_id for request_id, r in self.requests.items() if r.deposit_tx]

    def fills(self) -> list[str]:
        return [r.fill_tx for r in self.requests.values() if r.fill_tx]


def _step(step_id: str, request_id: str, user: str, to: str, data: str) -> dict:
    return {
        "id": step_id,
        "action": "Confirm transaction in your wallet",
        "description": "Approve the depository" if step_id == "approve" else "Deposit to the depository",
        "kind": "transaction",
        "requestId": request_id,
        "items": [
            {
                "status": "incomplete",
                "data": {"from": user, "to": to, "data": data, "value": "0", "chainId": None},
                "check": {"endpoint": f"/intents/status/v3?requestId={request_id}", "method": "GET"},
            }
        ],
    }


def _receipt(w3, tx_hash: str):
    try:
        return w3.eth.get_transaction_receipt(tx_hash)
    except Exception:  # not mined yet
        return None


def _json(body: dict, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")
