"""OpenAPI description of the platform's API-key authentication."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "platform_api.api.ApiKeyAuthentication"
    name = "ApiKey"
    match_subclasses = True  # the order interface's optional key too

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer svc_live_...` (or the same key in an `X-API-Key` header).",
        }
