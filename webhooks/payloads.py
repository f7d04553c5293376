"""The shapes of the webhook deliveries' bodies, for the OpenAPI schema (callbacks of POST /webhooks).

Representation only. `payment.completed` and `payment.failed` are built by
`webhooks.events.payment_completed_data` / `payment_failed_data` (one shape
for every kind of payment); `checkout.completed` and `checkout.expired` of a
platform session by the checkout, which documents them here (`@event_body`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from drf_spectacular.utils import OpenApiCallback, extend_schema
from rest_framework import serializers

from webhooks.kinds import EventType


class CheckoutSessionBlockSerializer(serializers.Serializer):
    id = serializers.CharField(allow_null=True, help_text="The checkout session, when the payment had one.")
    clientReferenceId = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField())
    customerEmail = serializers.CharField(allow_null=True)
    customerName = serializers.CharField(allow_null=True)


class PaymentEventDataSerializer(serializers.Serializer):
    """A payment, whatever paid it: a payment link or platform checkout session (`id` is its transaction,
    `txn_`), an order of the order interface (`id` is the order), or a quick payment (`qp_`)."""

    id = serializers.CharField()
    payment_link_id = serializers.CharField(allow_null=True)
    order_id = serializers.CharField(
        allow_null=True, help_text="The order that paid it (none for a quick payment)."
    )
    amount = serializers.CharField(help_text="In base units of `token_address`: what the recipient is paid.")
    token_address = serializers.CharField()
    chain_id = serializers.IntegerField()
    sender_address = serializers.CharField(allow_null=True)
    recipient_address = serializers.CharField()
    tx_hash = serializers.CharField(allow_null=True, help_text="The payer's transaction.")
    status = serializers.CharField()
    form_data = serializers.DictField(help_text="What the payer entered on the hosted page.")
    discount_code = serializers.CharField(allow_null=True)
    created_at = serializers.IntegerField(help_text="Milliseconds since the epoch.")
    completed_at = serializers.IntegerField(allow_null=True, help_text="Milliseconds since the epoch.")
    checkoutSession = CheckoutSessionBlockSerializer()


class PaymentFailedDataSerializer(PaymentEventDataSerializer):
    error = serializers.CharField(help_text="Why it failed, e.g. `SLIPPAGE: ...` or `expired`.")
    refund_tx_hash = serializers.CharField(allow_null=True, help_text="The refund, once sent.")


def _body(name: str, data: serializers.Serializer) -> serializers.Serializer:
    from drf_spectacular.utils import inline_serializer

    return inline_serializer(
        name,
        {
            "event": serializers.CharField(),
            "webhook_id": serializers.CharField(),
            "timestamp": serializers.CharField(help_text="ISO 8601."),
            "livemode": serializers.BooleanField(
                help_text="False for a test-mode organization's event (its test keys, its test chains)."
            ),
            "data": data,
        },
    )


S = TypeVar("S", bound=type[serializers.Serializer])

EVENT_BODIES = {
    EventType.PAYMENT_COMPLETED: _body("WebhookPaymentCompleted", PaymentEventDataSerializer()),
    EventType.PAYMENT_FAILED: _body("WebhookPaymentFailed", PaymentFailedDataSerializer()),
}


def _callback(event_type: EventType, body: serializers.Serializer) -> OpenApiCallback:
    return OpenApiCallback(
        event_type.value,  # a plain string: the schema is written as YAML too
        "{$request.body#/url}",
        extend_schema(
            summary=f"{event_type.value}: what the endpoint receives",
            description="Signed with `X-Service-Signature` (hex HMAC-SHA256 of the raw body). Answer 2xx within "
            "the timeout; anything else is retried.",
            request=body,
            responses={200: None},
        ),
    )


CALLBACKS = [_callback(event_type, body) for event_type, body in EVENT_BODIES.items()]


def event_body(event_type: EventType, name: str) -> Callable[[S], S]:
    """Document the `data` of an event an app above this one sends: decorate its serializer. The schema's
    callbacks list is read when the schema is generated, after every app is ready. A body is documented for an
    `EventType` only (a test checks that every one has its body)."""
    event_type = EventType(event_type)

    def register(serializer: S) -> S:
        if all(callback.name != event_type for callback in CALLBACKS):
            CALLBACKS.append(_callback(event_type, _body(name, serializer())))
        return serializer

    return register
