"""An RPC endpoint the rehearsal and the soak run as a process of its own: ``rpc ORIGIN PORT`` answers on PORT
for the node at ORIGIN (anvil cannot peer with another anvil, so a chain's primary and fallback "nodes" are two
endpoints of one node); killing it is a node going down. The relay provider's stand-in is
tools/relay_standin.py, shared with the suite.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests


def serve(port: int, handle) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # connections kept open, as a real node's endpoint keeps them

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
    local = threading.local()

    def handle(method, path, body):
        if not hasattr(local, "session"):  # one connection to the node per serving thread, kept open
            local.session = requests.Session()
            local.session.trust_env = False
        answer = local.session.post(
            origin, data=body, headers={"Content-Type": "application/json"}, timeout=30
        )
        return answer.status_code, answer.content

    serve(port, handle)


if __name__ == "__main__":
    rpc_endpoint(sys.argv[2], int(sys.argv[3]))
