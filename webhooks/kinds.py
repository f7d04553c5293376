"""The names of what the webhooks app sends, declared once: the events merchants' endpoints subscribe to, and
the kinds of email the notification outbox sends besides them. A notification row, a subject, an event body
is keyed by one of these members; anything else is refused where it would be written."""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    """What a merchant's endpoint may subscribe to; nothing else is emitted."""

    PAYMENT_COMPLETED = "payment.completed"
    PAYMENT_FAILED = "payment.failed"
    CHECKOUT_COMPLETED = "checkout.completed"
    CHECKOUT_EXPIRED = "checkout.expired"
    REFUND_CREATED = "refund.created"
    REFUND_UPDATED = "refund.updated"
    REFUND_SUCCEEDED = "refund.succeeded"
    REFUND_FAILED = "refund.failed"


EVENT_TYPES = tuple(event_type.value for event_type in EventType)
TEST_EVENT = "test.ping"


class EmailKind(StrEnum):
    """The emails that are not a merchant's notification of an event: to payers, members and owners."""

    TEST = "test"  # POST /api/v1/notifications/test
    RECEIPT_COMPLETED = "receipt.completed"  # the payer's receipt
    RECEIPT_REFUNDED = "receipt.refunded"  # the payer's: a failed payment went back
    RECEIPT_MERCHANT_REFUNDED = "receipt.merchant_refunded"  # the payer's: the merchant refunded
    MEMBER_INVITED = "member.invited"  # an invitation to the dashboard
    MEMBER_SECURITY = "member.security"  # a member's own account changed
    ORGANIZATION_PAYOUTS_CHANGED = "organization.payouts_changed"  # to every owner
    REFUND_BALANCE_WITHDRAWN = "refund_balance.withdrawn"  # to every owner
    WEBHOOK_DISABLED = "webhook.disabled"  # to the contact address: an endpoint failing in a row


EMAIL_KINDS = frozenset(EventType) | frozenset(EmailKind)
