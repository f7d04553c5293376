"""Domain errors: what services and adapters raise instead of choosing an HTTP status.

Each interface maps them at its edge: the order interface to its envelope
(`orders.envelope`), the platform to its Stripe-style error
(`platform_api.errors`). `field` names the input at fault, when there is one.
"""

from __future__ import annotations


class DomainError(Exception):
    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidRequest(DomainError):
    """The request cannot be served as asked (a bad value, an unsupported combination)."""


class NotFound(DomainError):
    """What the request names does not exist (for this caller)."""


class Conflict(DomainError):
    """The resource is not in a state that allows this (already done, already taken)."""


class UpstreamError(DomainError):
    """A provider outside the service failed or could not be reached; retrying later may work."""


class NotConfigured(DomainError):
    """The feature needs settings this deployment does not have."""
