"""A stand-in RPC node for failover tests: a real HTTP server in front of a real anvil node that can fail on
purpose (refuse, 500, non-JSON, a JSON-RPC internal error, another chain id, a head that lags)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests


class RpcProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.mode = "pass"  # pass | 500 | garbage | internal_error
        self.lag = 0  # blocks taken off every eth_blockNumber answer
        self.chain_id: int | None = None  # answered to eth_chainId instead of the node's
        self.balance: object = None  # answered to every eth_getBalance instead of the node's
        self.requests = 0
        self.methods: Counter[str] = Counter()  # JSON-RPC calls answered, by method
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy.requests += 1
                status, answer = proxy.answer(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, body: bytes) -> tuple[int, bytes]:
        if self.mode == "500":
            return 500, b'{"error": "upstream unavailable"}'
        if self.mode == "garbage":
            return 200, b"<html>maintenance</html>"
        request = json.loads(body)
        self.methods.update(c.get("method") for c in (request if isinstance(request, list) else [request]))
        if self.mode == "internal_error":
            calls = request if isinstance(request, list) else [request]
            errors = [
                {"jsonrpc": "2.0", "id": c.get("id"), "error": {"code": -32603, "message": "internal error"}}
                for c in calls
            ]
            return 200, json.dumps(errors if isinstance(request, list) else errors[0]).encode()
        answer = requests.post(
            self.upstream, data=body, headers={"Content-Type": "application/json"}, timeout=10
        )
        result = answer.json()
        calls = request if isinstance(request, list) else [request]
        answers = result if isinstance(result, list) else [result]
        methods = {c.get("id"): c.get("method") for c in calls}
        for item in answers:
            method = methods.get(item.get("id"))
            if method == "eth_blockNumber" and self.lag and "result" in item:
                item["result"] = hex(max(0, int(item["result"], 16) - self.lag))
            if method == "eth_chainId" and self.chain_id is not None:
                item["result"] = hex(self.chain_id)
            if method == "eth_getBalance" and self.balance is not None:
                item["result"] = self.balance
        return 200, json.dumps(result).encode()

    def stop(self) -> None:
        """Down: the port refuses connections from now on."""
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def rpc_proxies(upstream: str, count: int = 2):
    proxies = [RpcProxy(upstream) for _ in range(count)]
    try:
        yield proxies
    finally:
        for proxy in proxies:
            with contextlib.suppress(Exception):
                proxy.stop()
