"""The `data` of the checkout's own webhook events (`checkout.completed`, `checkout.expired`), for the
OpenAPI schema's callbacks of POST /webhooks."""

from __future__ import annotations

from rest_framework import serializers

from checkout.serializers import PlatformSessionSerializer
from webhooks.payloads import CheckoutSessionBlockSerializer, PaymentEventDataSerializer, event_body


@event_body("checkout.completed", "WebhookCheckoutCompleted")
class CheckoutCompletedDataSerializer(PaymentEventDataSerializer):
    session = PlatformSessionSerializer()
    shipping_address = serializers.DictField(allow_null=True)
    shipping_option = serializers.DictField(allow_null=True)
    discount_amount = serializers.CharField(allow_null=True)


@event_body("checkout.expired", "WebhookCheckoutExpired")
class CheckoutExpiredDataSerializer(PlatformSessionSerializer):
    checkoutSession = CheckoutSessionBlockSerializer()
    reason = serializers.CharField(help_text="timeout, expired_by_merchant or payment_link_deleted.")
