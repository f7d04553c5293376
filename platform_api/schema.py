"""OpenAPI description of API-key authentication on both interfaces."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "platform_api.api.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer svc_live_...` (or the same key in an `X-API-Key` header).",
        }


class OptionalApiKeyAuthenticationScheme(ApiKeyAuthenticationScheme):
    """The order interface is public; a key, when sent, makes the request act for its organization."""

    target_class = "orders.envelope.OptionalApiKeyAuthentication"
    name = "ApiKeyOptional"

    def get_security_requirement(self, auto_schema):
        return [{self.name: []}, {}]
