"""The OpenAPI document's view (apart from core.openapi, which DRF imports while drf_spectacular loads)."""

from __future__ import annotations

from drf_spectacular.views import SpectacularAPIView

from core.inputs import InvalidInput

FORMATS = {"json": "application/json", "yaml": "application/yaml"}


class SchemaView(SpectacularAPIView):
    """The OpenAPI document; `?format=json` or `?format=yaml` chooses its format as `Accept` would.

    DRF's own `?format=` override is off project-wide (it is the exports' parameter), so the schema reads
    it here; any other value is a 400 naming `format`, never the renderer lookup's 404.
    """

    def perform_content_negotiation(self, request, force=False):
        wanted = request.query_params.get("format")
        if wanted is None:
            return super().perform_content_negotiation(request, force)
        renderers = {r.media_type: r for r in self.get_renderers()}
        renderer = renderers.get(FORMATS.get(wanted, ""))
        if renderer is None:
            if force:  # rendering that very refusal: in JSON
                return renderers[FORMATS["json"]], FORMATS["json"]
            raise InvalidInput(f"format must be one of: {', '.join(FORMATS)}.", "format")
        return renderer, renderer.media_type
