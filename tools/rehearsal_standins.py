"""Stand-ins the production rehearsal (tools/rehearsal.py) runs as processes of their own.

- ``rpc ORIGIN PORT``: an RPC endpoint in front of one node (anvil cannot peer with another anvil, so the
  primary and fallback "nodes" are two endpoints of one chain); killing it is a node going down.
- ``relay RPC PORT KEY``: the relay provider's API as the service calls it (`POST /quote`,
  `GET /intents/status/v3`). Its quote asks the vault to pay its depository on the origin chain; once that
  payment is on the chain, it delivers to the recipient from its own inventory (an account it holds the key
  of) and answers `success` with the fill's hash. Same chain only, as the rehearsal needs; a quote with calls on
  the destination (`txs`) is refused (400), so the rehearsal's contract orders fail before any money moves. With a fault rate
  (`relay RPC PORT KEY RATE DELAY`, `make soak`), that share of calls fails: half answer 503 before doing
  anything, half do their work and answer only after DELAY seconds (past the service's time-out), as a
  provider that is overloaded or whose answer is lost. `GET /__stats` counts calls, faults and fills.
"""

from __future__ import annotations

import contextlib
import json
import random
import secrets
import sys
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import requests

NATIVE = "0x" + "00" * 20


def serve(port: int, handle) -> None:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # a late answer: the caller gave up waiting
                self.wfile.write(body)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._answer(*handle("POST", self.path, body))

        def do_GET(self):
            self._answer(*handle("GET", self.path, b""))

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def rpc_endpoint(origin: str, port: int) -> None:
    def handle(method, path, body):
        answer = requests.post(origin, data=body, headers={"Content-Type": "application/json"}, timeout=30)
        return answer.status_code, answer.content

    serve(port, handle)


def relay(rpc: str, port: int, key: str, fault_rate: float = 0.0, fault_delay: float = 0.0) -> None:
    from eth_account import Account
    from web3 import Web3

    w3 = Web3(Web3.HTTPProvider(rpc, request_kwargs={"timeout": 30}))
    solver = Account.from_key(key)
    depository = Web3.to_checksum_address("0x" + secrets.token_hex(20))
    erc20 = [
        {
            "name": "transfer",
            "type": "function",
            "stateMutability": "nonpayable",
            "inputs": [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
            "outputs": [{"name": "", "type": "bool"}],
        },
    ]
    requests_: dict[str, dict] = {}
    lock = threading.Lock()
    counts: Counter = Counter()
    fills: dict[str, list[str]] = defaultdict(list)  # recipient -> the fills sent to it

    def quote(body: dict) -> dict | None:
        if body.get("txs"):
            return None  # calls on the destination: not offered by this stand-in (the rehearsal's contract types)
        amount, token = int(body["amount"]), Web3.to_checksum_address(body["originCurrency"])
        request_id = "0x" + secrets.token_hex(32)
        if token == NATIVE:
            data = {"chainId": body["originChainId"], "to": depository, "value": str(amount), "data": "0x"}
        else:
            call = w3.eth.contract(address=token, abi=erc20).encode_abi("transfer", [depository, amount])
            data = {"chainId": body["originChainId"], "to": token, "value": "0", "data": call}
        with lock:
            requests_[request_id] = {
                "recipient": body["recipient"],
                "token": body["destinationCurrency"],
                "amount": amount,
                "fill": None,
            }
        step = {
            "id": "deposit",
            "kind": "transaction",
            "requestId": request_id,
            "items": [{"status": "incomplete", "data": data}],
        }
        currency = {"amount": str(amount), "currency": {"decimals": 18 if token == NATIVE else 6}}
        return {"steps": [step], "details": {"currencyIn": currency, "currencyOut": currency}}

    def deliver(request: dict) -> str:
        to, amount, token = (
            Web3.to_checksum_address(request["recipient"]),
            request["amount"],
            request["token"],
        )
        fields = {
            "from": solver.address,
            "nonce": w3.eth.get_transaction_count(solver.address, "pending"),
            "chainId": w3.eth.chain_id,
            "gas": 100_000,
            "maxFeePerGas": 3 * 10**9,
            "maxPriorityFeePerGas": 10**9,
        }
        if Web3.to_checksum_address(token) == NATIVE:
            tx = {**fields, "to": to, "value": amount}
        else:
            contract = w3.eth.contract(address=Web3.to_checksum_address(token), abi=erc20)
            tx = contract.functions.transfer(to, amount).build_transaction(fields)
        signed = solver.sign_transaction(tx)
        fill = w3.eth.send_raw_transaction(signed.raw_transaction).to_0x_hex()
        fills[to.lower()].append(fill)
        return fill

    def status(request_id: str) -> dict:
        with lock:
            request = requests_.get(request_id)
            if request is None:
                return {"status": "unknown"}
            if request["fill"] is None:
                # Paid when the depository holds what every request asked (the service pays each once).
                request["fill"] = deliver(request)
            fill = request["fill"]
        receipt = None
        try:
            receipt = w3.eth.get_transaction_receipt(fill)
        except Exception:  # not mined yet
            return {"status": "pending", "txHashes": []}
        return {
            "status": "success" if receipt["status"] == 1 else "failure",
            "txHashes": [fill],
            "inTxHashes": [],
        }

    def handle(method, path, body):
        parts = urlsplit(path)
        if parts.path == "/__stats":
            with lock:
                stats = {"calls": dict(counts), "fills": dict(fills)}
            return 200, json.dumps(stats).encode()
        fault = random.random() < fault_rate  # noqa: S311 - a fault injector, not a secret
        with lock:
            counts["calls"] += 1
        if fault and random.random() < 0.5:  # noqa: S311
            with lock:
                counts["503"] += 1
            return 503, b'{"message": "overloaded (an injected fault)"}'
        answer = _handle(method, parts, body)
        if fault:
            with lock:
                counts["late"] += 1
            time.sleep(fault_delay)  # the work is done; the answer arrives after the caller gave up
        return answer

    def _handle(method, parts, body):
        try:
            if method == "POST" and parts.path in ("/quote", "/quote/v2"):
                answer = quote(json.loads(body))
                if answer is None:
                    return (
                        400,
                        b'{"message": "calls on the destination chain are not supported", "errorCode": "UNSUPPORTED"}',
                    )
                return 200, json.dumps(answer).encode()
            if method == "GET" and parts.path == "/intents/status/v3":
                request_id = parse_qs(parts.query).get("requestId", [""])[0]
                return 200, json.dumps(status(request_id)).encode()
        except Exception as exc:  # a stand-in's failure: the service must see a 5xx, not a hang
            return 502, json.dumps({"message": str(exc)[:200]}).encode()
        return 404, b'{"message": "not found"}'

    serve(port, handle)


if __name__ == "__main__":
    if sys.argv[1] == "rpc":
        rpc_endpoint(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "relay":
        relay(sys.argv[2], int(sys.argv[3]), sys.argv[4], *(float(a) for a in sys.argv[5:7]))
