"""OpenAPI description of API-key authentication on both interfaces."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "platform_api.api.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer svc_live_...` (test mode: `svc_test_...`; or the same key in an "
            "`X-API-Key` header).",
        }


class OptionalApiKeyAuthenticationScheme(ApiKeyAuthenticationScheme):
    """The order interface and quick pay are public; a key, when sent, makes the request act for its organization."""

    target_class = "platform_api.api.OptionalApiKeyAuthentication"
    name = "ApiKeyOptional"

    def get_security_requirement(self, auto_schema):
        return [{self.name: []}, {}]


# --- Field rules the server applies, stated in the schema ---------------------------

from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension  # noqa: E402

# Text the server keeps: not blank once trimmed, and no NUL (which no database text column takes).
NON_BLANK_TEXT = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
ANY_TEXT = r"^[^\u0000]*$"
# A conservative form of what Django's URLValidator accepts: http(s), a dotted host name, a plain path.
HTTP_URL = r"^https?://[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,3}\.[a-z]{2,10}(/[A-Za-z0-9._~-]{0,40}){0,5}$"


class StrictCharFieldExtension(OpenApiSerializerFieldExtension):
    target_class = "core.fields.StrictCharField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request" and schema.get("type") == "string" and "pattern" not in schema:
            schema["pattern"] = ANY_TEXT if getattr(self.target, "allow_blank", False) else NON_BLANK_TEXT
        return schema


class UrlFieldExtension(OpenApiSerializerFieldExtension):
    target_class = "rest_framework.fields.URLField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["pattern"] = HTTP_URL
        return schema


class TemplateUrlFieldExtension(UrlFieldExtension):
    target_class = "orders.serializers.common.TemplateUrlField"
    match_subclasses = True
    priority = 1  # over StrictCharFieldExtension, which it would also match


class TokenAmountFieldExtension(OpenApiSerializerFieldExtension):
    """Digits in the token's smallest unit, below 2**256 (77 significant digits always are); zero only where allowed."""

    target_class = "chains.fields.TokenAmountField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        if direction == "response":
            return {"type": "string", "pattern": "^[0-9]+$", "example": "1000000"}
        first = "[0-9]" if self.target.allow_zero else "[1-9]"
        return {"type": "string", "pattern": f"^0{{0,8}}{first}[0-9]{{0,76}}$", "example": "1000000"}


class StrictSerializerExtension(OpenApiSerializerExtension):
    """Serializers that refuse unknown fields say so: additionalProperties false."""

    target_class = "core.fields.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema
