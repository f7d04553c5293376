"""Serializer fields several platform resources share: metadata, and http(s) URLs."""

from __future__ import annotations

from rest_framework import serializers

MAX_METADATA_KEYS = 50


MAX_METADATA_KEY_LENGTH = 40


MAX_METADATA_VALUE_LENGTH = 500


class WebUrlField(serializers.URLField):
    """A web address a payer's browser may be sent to or shown: http or https only, never `javascript:`,
    `data:`, `ftp:` or any other scheme (DRF's URLField takes ftp too)."""

    default_error_messages = {"invalid": "Enter an http(s) URL such as https://shop.example/."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value.lower().startswith(("https://", "http://")):
            self.fail("invalid")
        return value


def https_url_field(**kwargs) -> serializers.URLField:
    return WebUrlField(max_length=2048, **kwargs)


class StrictUrlField(serializers.URLField):
    """An http(s) URL given as a string; `{SESSION_ID}` may appear in it as a template."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        checked = data.replace("{SESSION_ID}", "SESSION_ID")
        super().to_internal_value(checked)
        if not checked.lower().startswith(("https://", "http://")):
            self.fail("invalid")
        return data


def check_metadata(value) -> dict:
    if not isinstance(value, dict):
        raise serializers.ValidationError("Must be a JSON object.")
    if len(value) > MAX_METADATA_KEYS:
        raise serializers.ValidationError(f"At most {MAX_METADATA_KEYS} keys.")
    for key, item in value.items():
        if len(key) > MAX_METADATA_KEY_LENGTH:
            raise serializers.ValidationError(
                f"Key '{key[:40]}...' is longer than {MAX_METADATA_KEY_LENGTH}."
            )
        if not isinstance(item, str) or len(item) > MAX_METADATA_VALUE_LENGTH:
            raise serializers.ValidationError(
                f"'{key}' must be a string of at most {MAX_METADATA_VALUE_LENGTH} characters."
            )
    return value


class MetadataField(serializers.JSONField):
    """String keys (at most 40 characters) to string values (at most 500), at most 50 keys."""

    def to_internal_value(self, data):
        return check_metadata(super().to_internal_value(data))
