"""What a product (and the payment link made of it) asks the payer: the form's fields and the shipping
options."""

from __future__ import annotations

import re

from rest_framework import serializers

from chains.fields import TokenAmountField
from core.fields import StrictBooleanField, StrictCharField, StrictIntegerField, WholeSerializer

FORM_FIELD_TYPES = ("text", "email", "phone", "select", "textarea", "number", "checkbox", "address")


MAX_FORM_FIELDS = 30


MAX_SHIPPING_OPTIONS = 20


_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class FormFieldSerializer(WholeSerializer):
    id = serializers.RegexField(_ID, error_messages={"invalid": "Letters, digits, '_' or '-', at most 40."})
    type = serializers.ChoiceField(choices=FORM_FIELD_TYPES)
    label = StrictCharField(max_length=100)
    required = StrictBooleanField(required=False, default=False)
    placeholder = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    options = serializers.ListField(
        child=StrictCharField(max_length=100), required=False, max_length=50, default=list
    )

    def validate(self, attrs):
        if attrs["type"] == "select" and not attrs["options"]:
            raise serializers.ValidationError({"options": ["A select field needs options."]})
        return attrs


class FormSchemaSerializer(WholeSerializer):
    fields = FormFieldSerializer(many=True, max_length=MAX_FORM_FIELDS, required=False, default=list)

    def validate_fields(self, value):
        ids = [field["id"] for field in value]
        if len(ids) != len(set(ids)):
            raise serializers.ValidationError("Field ids must be unique.")
        return value


class ShippingOptionSerializer(WholeSerializer):
    id = serializers.RegexField(_ID, error_messages={"invalid": "Letters, digits, '_' or '-', at most 40."})
    name = StrictCharField(max_length=100)
    amount = TokenAmountField(allow_zero=True)
    estimated_days = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=365)
    description = StrictCharField(max_length=500, required=False, allow_blank=True, default="")
