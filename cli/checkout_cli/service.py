"""The service's public API, as the CLI uses it: one session, the key as a bearer token, errors as messages."""

from __future__ import annotations

from typing import Any

import requests


class ServiceError(Exception):
    """The service refused a request: its status and the platform error's code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({code}, HTTP {status})")
        self.status, self.code, self.message = status, code, message

    @property
    def fatal(self) -> bool:
        """Asking again will not help: the key is refused, or lacks the permission."""
        return self.status in (401, 403)


class Unreachable(Exception):
    """No answer from the service (down, restarting, or the network)."""


class Service:
    def __init__(self, base_url: str, api_key: str, *, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {api_key}", "User-Agent": "checkout-cli/0.1"})
        self.timeout = timeout

    def call(self, method: str, path: str, *, timeout: float | None = None, **kwargs: Any) -> Any:
        try:
            answer = self.session.request(
                method, f"{self.base_url}{path}", timeout=timeout or self.timeout, **kwargs
            )
        except requests.RequestException as exc:
            raise Unreachable(f"{self.base_url} did not answer: {exc.__class__.__name__}") from None
        if answer.status_code >= 500 and answer.status_code != 503:
            raise Unreachable(f"{self.base_url} answered {answer.status_code}")
        try:
            body = answer.json()
        except ValueError:
            raise Unreachable(f"{self.base_url} answered {answer.status_code}, not JSON") from None
        if answer.status_code >= 400:
            error = body.get("error") if isinstance(body, dict) else None
            error = error if isinstance(error, dict) else {}
            message = str(error.get("message", answer.text[:200]))
            raise ServiceError(
                answer.status_code,
                str(error.get("code", "error")),
                f"{error['param']}: {message}" if error.get("param") else message,
            )
        return body

    def events_after(
        self, *, after: str | None, since: int | None, skip: list[str], types: list[str] | None, wait: int
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"wait": wait}
        if after:
            params["after"] = after
        if since is not None:
            params["since"] = since
        if skip:
            params["skip"] = ",".join(skip)
        if types:
            params["types"] = ",".join(types)
        return self.call("GET", "/api/v1/webhook-events/listen", params=params, timeout=wait + 15)
