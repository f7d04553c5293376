from rest_framework import serializers

from orders.serializers.common import StrictBooleanField, StrictCharField


def strings(**kwargs):
    return serializers.ListField(child=StrictCharField(max_length=64), max_length=20, **kwargs)


class SessionTokenSerializer(serializers.Serializer):
    destinationAddress = StrictCharField(max_length=128)
    blockchains = strings(allow_empty=False)
    assets = strings(required=False)


class DirectUrlSerializer(SessionTokenSerializer):
    presetFiatAmount = StrictCharField(required=False, max_length=32)
    fiatCurrency = StrictCharField(required=False, max_length=8)
    defaultAsset = StrictCharField(required=False, max_length=32)
    defaultPaymentMethod = StrictCharField(required=False, max_length=64)
    redirectUrl = serializers.URLField(required=False, max_length=2048)


class OnrampUrlSerializer(serializers.Serializer):
    presetFiatAmount = StrictCharField(max_length=32)
    fiatCurrency = StrictCharField(max_length=8)
    defaultAsset = StrictCharField(max_length=32)
    defaultPaymentMethod = StrictCharField(max_length=64)
    destinationAddress = StrictCharField(max_length=128)
    blockchains = strings(allow_empty=False)
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
