"""Domain errors: what services and adapters raise instead of choosing an HTTP status.

Each error carries a domain code (`ErrorCode`, after Saleor's error-code
enums) and, when one input is at fault, the `field` that names it. Only the
edges turn them into answers: the order interface into its envelope
(`orders.envelope`), the platform into its Stripe-style error
(`platform_api.errors.from_domain_error`), the hosted page into a message on
the page.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """What went wrong, independent of any interface."""

    INVALID = "invalid"  # a value the domain does not accept
    REQUIRED = "required"  # a value the domain needs was not given (nor defaulted)
    NOTHING_TO_UPDATE = "nothing_to_update"  # an update that names no field
    NOT_FOUND = "not_found"
    UNIQUE = "unique"  # another resource already has this value
    INVALID_STATE = "invalid_state"  # not allowed in the resource's present state
    UPSTREAM = "upstream"  # a provider failed or could not be reached
    NOT_CONFIGURED = "not_configured"
    FORBIDDEN = "forbidden"  # more than the one acting may do


class DomainError(Exception):
    default_code = ErrorCode.INVALID

    def __init__(self, message: str, *, field: str | None = None, code: ErrorCode | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.code = code or self.default_code


class InvalidRequest(DomainError):
    """The request cannot be served as asked (a bad value, a missing one, an unsupported combination)."""


class NotFound(DomainError):
    """What the request names does not exist (for this caller)."""

    default_code = ErrorCode.NOT_FOUND


class Conflict(DomainError):
    """The resource is not in a state that allows this (already done, already taken)."""

    default_code = ErrorCode.INVALID_STATE


class Forbidden(DomainError):
    """The one acting may not do this (a member's role, a key's permissions)."""

    default_code = ErrorCode.FORBIDDEN


class UpstreamError(DomainError):
    """A provider outside the service failed or could not be reached; retrying later may work."""

    default_code = ErrorCode.UPSTREAM


class NotConfigured(DomainError):
    """The feature needs settings this deployment does not have."""

    default_code = ErrorCode.NOT_CONFIGURED


NOTHING_TO_UPDATE = "The request contains no fields that can be updated."
