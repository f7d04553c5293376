"""Every name an audit event is recorded under, declared once.

`record_write` (platform_api.signals) takes only these: a misspelt name fails the write that records it
(in the write's transaction, so nothing is half-written) rather than landing in the log under a name no
filter finds. `GET /api/v1/events?type=` filters by them, and `manage.py wiring` lists them. The apps that
record each group are named beside it; a new write adds its member here.
"""

from __future__ import annotations

from enum import StrEnum


class AuditName(StrEnum):
    # platform_api: keys
    API_KEY_CREATED = "api_key.created"
    API_KEY_REVOKED = "api_key.revoked"
    # merchant: the organization, its logo, products, customers
    ORGANIZATION_UPDATED = "organization.updated"
    ORGANIZATION_LOGO_UPDATED = "organization.logo_updated"
    ORGANIZATION_LOGO_DELETED = "organization.logo_deleted"
    PRODUCT_CREATED = "product.created"
    PRODUCT_UPDATED = "product.updated"
    PRODUCT_DELETED = "product.deleted"
    CUSTOMER_CREATED = "customer.created"
    CUSTOMER_UPDATED = "customer.updated"
    CUSTOMER_DELETED = "customer.deleted"
    # checkout: payment links, discount codes, widgets
    PAYMENT_LINK_CREATED = "payment_link.created"
    PAYMENT_LINK_UPDATED = "payment_link.updated"
    PAYMENT_LINK_DELETED = "payment_link.deleted"
    DISCOUNT_CODE_CREATED = "discount_code.created"
    DISCOUNT_CODE_UPDATED = "discount_code.updated"
    DISCOUNT_CODE_DELETED = "discount_code.deleted"
    WIDGET_CREATED = "widget.created"
    WIDGET_UPDATED = "widget.updated"
    WIDGET_DELETED = "widget.deleted"
    # webhooks: endpoints, events resent, notification settings
    WEBHOOK_CREATED = "webhook.created"
    WEBHOOK_UPDATED = "webhook.updated"
    WEBHOOK_DELETED = "webhook.deleted"
    WEBHOOK_SECRET_ROTATED = "webhook.secret_rotated"  # noqa: S105 - an event name, not a secret
    WEBHOOK_EVENT_RESENT = "webhook_event.resent"
    NOTIFICATION_UPDATED = "notification.updated"
    # refunds: refunds and the refund balance
    REFUND_CREATED = "refund.created"
    REFUND_CANCELED = "refund.canceled"
    REFUND_BALANCE_WITHDRAWN = "refund_balance.withdrawn"
    # dashboard: members, invitations, sign-in and second factors
    INVITATION_CREATED = "invitation.created"
    INVITATION_REVOKED = "invitation.revoked"
    MEMBER_JOINED = "member.joined"
    MEMBER_SIGNED_IN = "member.signed_in"
    MEMBER_DELETED = "member.deleted"
    MEMBER_PASSWORD_RESET = "member.password_reset"  # noqa: S105 - an event name, not a password
    MEMBER_SIGNED_OUT_EVERYWHERE = "member.signed_out_everywhere"
    MEMBER_TWO_FACTOR_ENABLED = "member.two_factor_enabled"
    MEMBER_TWO_FACTOR_REPLACED = "member.two_factor_replaced"
    MEMBER_TWO_FACTOR_RESET = "member.two_factor_reset"
    MEMBER_RECOVERY_CODES_ISSUED = "member.recovery_codes_issued"
    MEMBER_RECOVERY_CODE_USED = "member.recovery_code_used"
