from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.fields import StrictBooleanField, StrictCharField


def strings(**kwargs):
    return serializers.ListField(child=StrictCharField(max_length=64), max_length=20, **kwargs)


@extend_schema_field({"type": "string", "pattern": r"^[1-9][0-9]{0,8}(\.[0-9]{1,2})?$", "example": "25.00"})
class PositiveDecimalText(StrictCharField):
    """A positive decimal amount written as text, such as '25.00'."""


class SessionTokenSerializer(serializers.Serializer):
    destinationAddress = StrictCharField(max_length=128)
    blockchains = strings(allow_empty=False, min_length=1)
    assets = strings(required=False)


class DirectUrlSerializer(SessionTokenSerializer):
    presetFiatAmount = StrictCharField(required=False, max_length=32)
    fiatCurrency = StrictCharField(required=False, max_length=8)
    defaultAsset = StrictCharField(required=False, max_length=32)
    defaultPaymentMethod = StrictCharField(required=False, max_length=64)
    redirectUrl = serializers.URLField(required=False, max_length=2048)


class OnrampUrlSerializer(serializers.Serializer):
    presetFiatAmount = PositiveDecimalText(max_length=32)
    fiatCurrency = StrictCharField(max_length=8)
    defaultAsset = StrictCharField(max_length=32)
    defaultPaymentMethod = StrictCharField(max_length=64)
    destinationAddress = StrictCharField(max_length=128)
    blockchains = strings(allow_empty=False, min_length=1)
    country = StrictCharField(min_length=2, max_length=2)
    orderId = StrictCharField(max_length=64)
    redirectUrl = serializers.URLField(max_length=2048)
    useSessionToken = StrictBooleanField(required=False, default=False)

    def validate_presetFiatAmount(self, value):
        try:
            amount = float(value)
        except ValueError:
            raise serializers.ValidationError("Must be a decimal amount such as '25.00'.") from None
        if not amount > 0:
            raise serializers.ValidationError("Must be greater than 0.")
        return value
