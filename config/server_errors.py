"""Gunicorn's own answers (a request line or header it refuses before Django sees the request) in JSON.

Gunicorn writes those errors itself as `text/html` (`gunicorn.util.write_error`). The service answers JSON
only, so they are written here instead. The request was not parsed, so which interface it was for is not
known: the body carries both envelopes' fields, the order interface's `{success, message, data,
statusCode}` and the platform's `{error: {type, code, message}}`, and each client reads its own.
"""

from __future__ import annotations

import json

from gunicorn import util

# The platform's codes (platform_api.errors): anything gunicorn refuses is an invalid request but for these.
CODES = {
    403: "insufficient_permissions",
    413: "request_too_large",
    414: "request_too_large",
    431: "request_too_large",
    500: "internal_error",
}
TYPES = {403: "permission_error", 500: "api_error"}


def error_body(status: int, message: str) -> bytes:
    """One JSON body in both interfaces' envelopes. The message is gunicorn's, bounded (it may quote the
    client's request line)."""
    message = message[:200] or "The server could not read the request."
    return json.dumps(
        {
            "success": False,
            "message": message,
            "data": None,
            "statusCode": status,
            "error": {
                "type": TYPES.get(status, "invalid_request_error"),
                "code": CODES.get(status, "invalid_field_value"),
                "message": message,
            },
        }
    ).encode()


def write_json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    body = error_body(status_int, mesg)
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


def install() -> None:
    """Replace gunicorn's HTML writer; its workers look it up as `util.write_error` at each error."""
    util.write_error = write_json_error
