"""The relay provider stood in for on the suite's two devnets: tools/relay_standin.py (the one stand-in the
suite, `make rehearsal` and `make soak` share; its docstring cites the provider's documentation for every
field), served through pytest-httpserver. A request moves when its status is asked, so a test decides when."""

from __future__ import annotations

import json

from werkzeug import Response

from tools.relay_standin import SOLVER_ACCOUNT
from tools.relay_standin import RelayStandIn as _RelayStandIn

__all__ = ["SOLVER_ACCOUNT", "RelayStandIn"]


class RelayStandIn(_RelayStandIn):
    """The provider between Devnet A (`origin`, where the vault deposits) and Devnet B (`destination`, where it
    fills); `depository` and `multicaller` are the ones on those chains."""

    def __init__(self, *, origin, destination, **options):
        super().__init__(
            chains={origin.eth.chain_id: origin, destination.eth.chain_id: destination}, **options
        )
        self.origin, self.destination = origin, destination
        self.depository = self.depositories[origin.eth.chain_id]
        self.multicaller = self.multicallers[destination.eth.chain_id]

    def serve(self, httpserver) -> RelayStandIn:
        routes = (
            ("/quote/v2", "POST"),
            ("/intents/status/v3", "GET"),
            ("/fast-fill", "POST"),
            ("/requests/v3", "GET"),
        )
        for path, method in routes:
            httpserver.expect_request(path, method=method).respond_with_handler(self._werkzeug)
        return self

    def _werkzeug(self, request) -> Response:
        status, body = self.handle(
            request.method,
            request.path,
            request.query_string.decode(),
            request.get_data(),
            request.headers.get("x-api-key", ""),
        )
        return Response(json.dumps(body), status=status, content_type="application/json")
