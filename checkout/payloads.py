"""`checkout.completed` and `checkout.expired`: the one builder of each event's `data`, whichever interface made
the session, and the shapes the OpenAPI schema documents for them (the callbacks of POST /webhooks)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from checkout.models import CheckoutSession
from checkout.serializers import PlatformSessionSerializer
from webhooks.events import Payment, payment_completed_data
from webhooks.kinds import EventType
from webhooks.payloads import CheckoutSessionBlockSerializer, PaymentEventDataSerializer, event_body


def session_data(session: CheckoutSession) -> dict[str, Any]:
    """The session as the platform shows it (`GET /api/v1/checkout/sessions/{id}`)."""
    return dict(PlatformSessionSerializer(session).data)


def session_block(session: CheckoutSession) -> dict[str, Any]:
    """The `checkoutSession` block of every event about a session's payment."""
    return {
        "id": session.id,
        "clientReferenceId": session.client_reference_id or None,
        "metadata": session.metadata,
        "customerEmail": session.customer_email or None,
        "customerName": session.customer_name or None,
    }


def checkout_completed_data(session: CheckoutSession, payment: Payment) -> dict[str, Any]:
    """`data` of `checkout.completed`: the payment (as `payment.completed` has it), then the session."""
    return payment_completed_data(payment) | {
        "session": session_data(session),
        "form_data": session.form_data,
        "shipping_address": session.shipping_address,
        "shipping_option": session.shipping_option,
        "discount_amount": str(session.discount_amount) if session.discount_amount is not None else None,
    }


def checkout_expired_data(session: CheckoutSession, reason: str) -> dict[str, Any]:
    """`data` of `checkout.expired`: the session, its `checkoutSession` block, and why it expired."""
    return session_data(session) | {"checkoutSession": session_block(session), "reason": reason}


class EventSessionSerializer(PlatformSessionSerializer):
    """The session in a `checkout.*` event: the platform's shape, for a session of either interface. One made on
    the order interface has a UUID id and names no hosted page, token, chain or recipient (its order does)."""

    id = serializers.CharField(help_text="Prefix `cs_` (a UUID for a session made on the order interface).")
    url = serializers.SerializerMethodField()
    token_address = serializers.CharField(allow_null=True)
    chain_id = serializers.IntegerField(allow_null=True)
    recipient_address = serializers.CharField(allow_null=True)

    @extend_schema_field(
        serializers.CharField(
            allow_null=True, help_text="The hosted page; null for an order interface session."
        )
    )
    def get_url(self, session) -> str | None:
        return super().get_url(session)


@event_body(EventType.CHECKOUT_COMPLETED, "WebhookCheckoutCompleted")
class CheckoutCompletedDataSerializer(PaymentEventDataSerializer):
    session = EventSessionSerializer()
    shipping_address = serializers.DictField(allow_null=True)
    shipping_option = serializers.DictField(allow_null=True)
    discount_amount = serializers.CharField(allow_null=True)


@event_body(EventType.CHECKOUT_EXPIRED, "WebhookCheckoutExpired")
class CheckoutExpiredDataSerializer(EventSessionSerializer):
    checkoutSession = CheckoutSessionBlockSerializer()
    reason = serializers.CharField(
        help_text="timeout, expired_by_merchant or payment_link_deleted; for a session made on the order "
        "interface also expired_by_request, order_failed or order_expired."
    )
