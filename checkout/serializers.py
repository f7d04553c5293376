"""Validation and representation of payment links, platform checkout sessions and transactions."""

from __future__ import annotations

import re

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chains.fields import AddressField, PayeeAddressField, SupportedChainIdField, TokenAmountField
from checkout.models import DiscountCode
from core.fields import (
    EpochMillisField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    WholeSerializer,
)
from merchant.serializers import MAX_SHIPPING_OPTIONS, FormSchemaSerializer, ShippingOptionSerializer
from platform_api.fields import MetadataField, StrictUrlField, https_url_field

MAX_ITEMS = 100


class BrandingSerializer(WholeSerializer):
    logo_url = https_url_field(required=False, allow_blank=True)
    business_name = StrictCharField(max_length=100, required=False, allow_blank=True)


class LinkItemSerializer(WholeSerializer):
    name = StrictCharField(max_length=100)
    amount = TokenAmountField(allow_zero=True)
    quantity = StrictIntegerField(required=False, default=1, min_value=1, max_value=1_000_000)
    description = StrictCharField(max_length=500, required=False, allow_blank=True, default="")
    image_url = https_url_field(required=False, allow_blank=True, default="")
    sort_order = StrictIntegerField(required=False, default=0, min_value=-1_000_000, max_value=1_000_000)
    product_id = StrictCharField(max_length=32, required=False, allow_null=True, default=None)


class PaymentLinkWriteSerializer(StrictSerializer):
    """Create (every rule) and, with `partial=True`, update; cross-field rules are checked on the merged link."""

    name = StrictCharField(max_length=100)
    token_address = AddressField(
        required=False, help_text="Default: the organization's default_token_address."
    )
    chain_id = SupportedChainIdField(
        required=False, help_text="Default: the organization's default_chain_id."
    )
    recipient_address = PayeeAddressField(required=False, help_text="Default: the organization's recipient.")
    description = StrictCharField(max_length=500, required=False, allow_blank=True)
    amount = TokenAmountField(required=False, allow_null=True)
    min_amount = TokenAmountField(required=False, allow_null=True)
    max_amount = TokenAmountField(required=False, allow_null=True)
    suggested_amount = TokenAmountField(required=False, allow_null=True)
    product_id = StrictCharField(max_length=32, required=False, allow_null=True)
    image_url = https_url_field(required=False, allow_blank=True)
    theme_color = serializers.RegexField(
        r"^#[0-9a-fA-F]{6}$",
        required=False,
        allow_blank=True,
        error_messages={"invalid": "Must be a colour such as #1a2b3c."},
    )
    button_text = StrictCharField(max_length=50, required=False)
    max_uses = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=2_000_000_000)
    expires_at = EpochMillisField(required=False, allow_null=True)
    form_schema = FormSchemaSerializer(required=False)
    shipping_options = ShippingOptionSerializer(many=True, required=False, max_length=MAX_SHIPPING_OPTIONS)
    collect_shipping_address = StrictBooleanField(required=False)
    return_url = https_url_field(required=False, allow_blank=True)
    return_label = StrictCharField(max_length=100, required=False, allow_blank=True)
    branding = BrandingSerializer(required=False)
    fee_on_top = StrictBooleanField(required=False)
    items = LinkItemSerializer(many=True, required=False, max_length=MAX_ITEMS)

    def validate_expires_at(self, value):
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("Must be in the future.")
        return value

    def validate_shipping_options(self, value):
        ids = [option["id"] for option in value]
        if len(ids) != len(set(ids)):
            raise serializers.ValidationError("Shipping option ids must be unique.")
        return value


class PaymentLinkUpdateSerializer(PaymentLinkWriteSerializer):
    an_update = True
    is_active = StrictBooleanField(required=False)
    items = LinkItemSerializer(
        many=True,
        required=False,
        max_length=MAX_ITEMS,
        help_text="Replaces every item of the link (an empty list removes them); "
        "/payment-links/{id}/items adds or removes one.",
    )


class PaymentLinkItemSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField()
    name = serializers.CharField()
    amount = TokenAmountField(allow_zero=True)
    quantity = serializers.IntegerField()
    description = serializers.CharField()
    image_url = serializers.CharField()
    sort_order = serializers.IntegerField()
    product_id = serializers.CharField(allow_null=True)
    created_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "payment_link_item"


class PaymentLinkSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `pl_`.")
    name = serializers.CharField()
    description = serializers.CharField()
    short_code = serializers.CharField(help_text="8 characters; the hosted page is `/pay/{short_code}`.")
    url = serializers.SerializerMethodField()
    token_address = serializers.CharField()
    chain_id = serializers.IntegerField()
    recipient_address = serializers.CharField()
    amount = TokenAmountField(allow_null=True, help_text="Fixed price; null when the payer chooses.")
    min_amount = TokenAmountField(allow_null=True)
    max_amount = TokenAmountField(allow_null=True)
    suggested_amount = TokenAmountField(allow_null=True)
    product_id = serializers.CharField(allow_null=True)
    image_url = serializers.CharField()
    theme_color = serializers.CharField()
    button_text = serializers.CharField()
    max_uses = serializers.IntegerField(allow_null=True)
    current_uses = serializers.IntegerField(help_text="Completed payments.")
    expires_at = EpochMillisField(allow_null=True)
    form_schema = serializers.JSONField()
    shipping_options = serializers.JSONField()
    collect_shipping_address = serializers.BooleanField()
    return_url = serializers.CharField()
    return_label = serializers.CharField()
    branding = serializers.JSONField()
    fee_on_top = serializers.BooleanField()
    is_active = serializers.BooleanField()
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "payment_link"

    def get_url(self, link) -> str:
        from django.conf import settings

        return f"{settings.PUBLIC_BASE_URL}/pay/{link.short_code}"


class PaymentLinkDetailSerializer(PaymentLinkSerializer):
    items = PaymentLinkItemSerializer(many=True, source="items.all")


class PlatformSessionCreateSerializer(StrictSerializer):
    payment_link_id = StrictCharField(max_length=64, required=False)
    token_address = AddressField(required=False)
    chain_id = SupportedChainIdField(required=False)
    recipient_address = PayeeAddressField(required=False)
    amount = TokenAmountField(required=False)
    product_id = StrictCharField(max_length=32, required=False, allow_null=True)
    success_url = StrictUrlField(max_length=2048, required=False, allow_blank=True)
    cancel_url = StrictUrlField(max_length=2048, required=False, allow_blank=True)
    client_reference_id = StrictCharField(max_length=200, required=False, allow_blank=True)
    metadata = MetadataField(required=False)
    customer_email = serializers.EmailField(max_length=254, required=False, allow_blank=True)
    customer_name = StrictCharField(max_length=200, required=False, allow_blank=True)
    expires_in = StrictIntegerField(required=False, min_value=300, max_value=86400)
    utm_source = StrictCharField(max_length=200, required=False, allow_blank=True)
    utm_medium = StrictCharField(max_length=200, required=False, allow_blank=True)
    utm_campaign = StrictCharField(max_length=200, required=False, allow_blank=True)
    discount_code = StrictCharField(max_length=50, required=False, allow_blank=True)

    def validate(self, attrs):
        if attrs.get("payment_link_id"):
            return attrs
        for name in ("token_address", "chain_id", "recipient_address", "amount"):
            if name not in attrs:
                raise serializers.ValidationError(
                    {name: ["This field is required without a payment_link_id."]}, code="required"
                )
        return attrs


class PlatformSessionSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `cs_`.")
    url = serializers.SerializerMethodField()
    status = serializers.CharField(help_text="open, processing, completed, expired or failed.")
    payment_link_id = serializers.CharField(allow_null=True)
    product_id = serializers.CharField(allow_null=True)
    widget_id = serializers.CharField(allow_null=True, help_text="The widget the payer started from, if any.")
    amount = TokenAmountField(allow_null=True, help_text="What the payer pays, after any discount.")
    token_address = serializers.CharField()
    chain_id = serializers.IntegerField()
    recipient_address = serializers.CharField()
    success_url = serializers.CharField(allow_null=True)
    cancel_url = serializers.CharField(allow_null=True)
    client_reference_id = serializers.CharField(allow_null=True)
    metadata = serializers.JSONField()
    customer_email = serializers.CharField(allow_null=True)
    customer_name = serializers.CharField(allow_null=True)
    discount_code = serializers.SerializerMethodField()
    discount_amount = TokenAmountField(allow_null=True, allow_zero=True)
    tx_hash = serializers.CharField(allow_null=True)
    payer_address = serializers.CharField(allow_null=True)
    customer_id = serializers.CharField(allow_null=True)
    form_data = serializers.JSONField()
    shipping_address = serializers.JSONField(allow_null=True)
    completed_at = EpochMillisField(allow_null=True)
    expires_at = EpochMillisField()
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "checkout_session"

    @extend_schema_field(serializers.CharField())
    def get_url(self, session) -> str | None:
        """The hosted page (a session made on the order interface, seen only in `checkout.*` events, has none:
        `checkout.payloads.EventSessionSerializer` documents the null)."""
        from django.conf import settings

        if session.created_through != session.CreatedThrough.PLATFORM:
            return None
        return f"{settings.PUBLIC_BASE_URL}/pay/s/{session.id}"

    def get_discount_code(self, session) -> str | None:
        return session.discount_code.code if session.discount_code_id else None

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for name in (
            "success_url",
            "cancel_url",
            "client_reference_id",
            "customer_email",
            "customer_name",
            "tx_hash",
            "payer_address",
            "token_address",
            "recipient_address",
        ):
            data[name] = data[name] or None
        return data


class TransactionSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `txn_`.")
    status = serializers.CharField(help_text="pending, confirming, completed or failed.")
    tx_hash = serializers.CharField(allow_null=True)
    chain_id = serializers.IntegerField()
    from_address = serializers.CharField(allow_null=True)
    to_address = serializers.CharField()
    token_address = serializers.CharField()
    amount = TokenAmountField(allow_zero=True)
    amount_usd = serializers.DecimalField(max_digits=20, decimal_places=2, allow_null=True)
    source_chain_id = serializers.IntegerField()
    source_token_address = serializers.CharField()
    source_amount = TokenAmountField(
        allow_zero=True,
        help_text="What arrived from the payer, in the source token (the price asked, or more).",
    )
    refunded_amount = TokenAmountField(
        allow_zero=True,
        help_text="What arrived beyond the price and goes back to the payer, in the source token.",
    )
    fee_amount = TokenAmountField(allow_zero=True)
    amount_refunded = TokenAmountField(
        allow_zero=True,
        help_text="What the merchant's refunds give back of `amount` (pending and succeeded), in its token.",
    )
    refunds = serializers.ListField(
        source="refund_ids", child=serializers.CharField(), help_text="The merchant's refunds (`re_`)."
    )
    payment_link_id = serializers.CharField(allow_null=True)
    session_id = serializers.CharField(allow_null=True)
    customer_id = serializers.CharField(allow_null=True)
    order_id = serializers.CharField(allow_null=True, help_text="None for a quick payment.")
    quick_payment_id = serializers.CharField(
        allow_null=True, help_text="The quick payment (`qp_`) this transaction records, if one."
    )
    form_data = serializers.JSONField()
    shipping_address = serializers.JSONField(allow_null=True)
    metadata = serializers.JSONField()
    created_at = EpochMillisField()
    updated_at = EpochMillisField()
    completed_at = EpochMillisField(allow_null=True)

    def get_object(self, _obj) -> str:
        return "transaction"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["tx_hash"] = data["tx_hash"] or None
        data["from_address"] = data["from_address"] or None
        return data


CODE = re.compile(r"^[A-Za-z0-9_-]{1,50}$")  # a discount code


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 1, "maximum": 2**256 - 1},
            {"type": "string", "pattern": "^[0-9]{1,78}$"},
        ],
        "description": "Percent (1..100), or the smallest token unit; answered as a string.",
    }
)
class DiscountValueField(serializers.Field):
    """A whole number, as a JSON number or a string of digits (a fixed value may pass 2**53)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str):
            raise serializers.ValidationError("Must be a whole number.")
        text = str(data)
        if not text.isascii() or not text.isdigit() or len(text.lstrip("0")) > 78 or int(text) < 1:
            raise serializers.ValidationError("Must be a whole number greater than zero.")
        if int(text) >= 2**256:
            raise serializers.ValidationError("Is larger than a 256-bit amount.")
        return int(text)

    def to_representation(self, value):
        return str(int(value))


class DiscountWriteSerializer(StrictSerializer):
    code = serializers.RegexField(
        CODE, error_messages={"invalid": "Letters, digits, '_' or '-', at most 50."}
    )
    type = serializers.ChoiceField(choices=DiscountCode.Type.values)
    value = DiscountValueField()
    payment_link_id = StrictCharField(max_length=64, required=False, allow_null=True)
    max_uses = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=2_000_000_000)
    min_order_amount = TokenAmountField(required=False, allow_null=True, allow_zero=True)
    expires_at = EpochMillisField(required=False, allow_null=True)

    def validate_expires_at(self, value):
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("Must be in the future.")
        return value


class DiscountUpdateSerializer(DiscountWriteSerializer):
    an_update = True
    is_active = StrictBooleanField(required=False)
