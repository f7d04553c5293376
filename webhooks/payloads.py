"""The shapes of the webhook deliveries' bodies, for the OpenAPI schema (callbacks of POST /webhooks).

Representation only: the bodies are built where the events are emitted
(orders.checkout for payment links and sessions, orders.services and
orders.deposits for orders and quick payments).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiCallback, extend_schema
from rest_framework import serializers

from platform_api.merchant_serializers import PlatformSessionSerializer, TransactionSerializer


class CheckoutSessionBlockSerializer(serializers.Serializer):
    id = serializers.CharField(required=False, help_text="The session (`cs_`), when there is one.")
    clientReferenceId = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField())
    customerEmail = serializers.CharField(allow_null=True)
    customerName = serializers.CharField(allow_null=True)


class PaymentEventDataSerializer(TransactionSerializer):
    """A payment through a link or checkout session: the transaction, and who paid whom."""

    sender_address = serializers.CharField(allow_null=True)
    recipient_address = serializers.CharField()
    discount_code = serializers.CharField(allow_null=True)
    checkoutSession = CheckoutSessionBlockSerializer()


class PaymentFailedDataSerializer(PaymentEventDataSerializer):
    error = serializers.CharField(help_text="Why it failed, e.g. `SLIPPAGE: ...` or `expired`.")
    refund_tx_hash = serializers.CharField(allow_null=True, help_text="The refund, once sent.")


class CheckoutCompletedDataSerializer(PaymentEventDataSerializer):
    session = PlatformSessionSerializer()
    shipping_option = serializers.DictField(allow_null=True)
    discount_amount = serializers.CharField(allow_null=True)


class CheckoutExpiredDataSerializer(PlatformSessionSerializer):
    checkoutSession = CheckoutSessionBlockSerializer()
    reason = serializers.CharField(help_text="timeout, expired_by_merchant or payment_link_deleted.")


def _body(name: str, data: serializers.Serializer) -> serializers.Serializer:
    from drf_spectacular.utils import inline_serializer

    return inline_serializer(name, {
        "event": serializers.CharField(), "webhook_id": serializers.CharField(),
        "timestamp": serializers.CharField(help_text="ISO 8601."), "data": data,
    })  # fmt: skip


EVENT_BODIES = {
    "payment.completed": _body("WebhookPaymentCompleted", PaymentEventDataSerializer()),
    "payment.failed": _body("WebhookPaymentFailed", PaymentFailedDataSerializer()),
    "checkout.completed": _body("WebhookCheckoutCompleted", CheckoutCompletedDataSerializer()),
    "checkout.expired": _body("WebhookCheckoutExpired", CheckoutExpiredDataSerializer()),
}

CALLBACKS = [
    OpenApiCallback(
        event_type,
        "{$request.body#/url}",
        extend_schema(
            summary=f"{event_type}: what the endpoint receives",
            description="Signed with `X-Service-Signature` (hex HMAC-SHA256 of the raw body). Answer 2xx within "
            "the timeout; anything else is retried.",
            request=body,
            responses={200: None},
        ),
    )
    for event_type, body in EVENT_BODIES.items()
]
