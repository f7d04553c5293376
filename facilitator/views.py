"""The x402 facilitator's HTTP interface, at /x402/ (the specification's section 7).

`GET /x402/supported` is public: the kinds (version 1 and 2, `exact`, each chain that takes payments and has
a token with EIP-3009 in the registry), the extensions and the signer that pays the gas. `POST /x402/verify`
needs a platform API key (`read`) and `POST /x402/settle` one that may `write`, since settling spends the
service's gas; each key's settlements are limited per minute (X402_SETTLE_RATE_LIMIT_PER_MINUTE). A key that
is missing, wrong or short of the level is answered in the platform's error envelope, as anywhere a key is
asked for; everything about the payment is answered in the protocol's shapes (`VerifyResponse`,
`SettleResponse`) with 200, as the reference SDK's facilitator client expects, and a body that is not JSON
with 400 in the same shape.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from chains.models import Token
from chains.registry import chains
from chains.signers import signer_address
from facilitator import protocol
from facilitator.service import SIGNER, settle_answer, verify_answer
from platform_api.api import PlatformAPIView
from platform_api.models import Permission


def _body(request) -> Any:
    """The request's JSON, or `protocol.Refused` (a body that is not JSON is no x402 request)."""
    try:
        return json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise protocol.Refused(protocol.INVALID_PAYLOAD, "the body is not JSON") from None


@require_GET
def supported(request: HttpRequest) -> JsonResponse:
    """The payment kinds this facilitator verifies and settles."""
    taking = {chain.chain_id for chain in chains() if chain.accepts_payments}
    with_tokens = sorted(
        set(Token.objects.filter(eip3009=True, chain_id__in=taking).values_list("chain_id", flat=True))
    )
    kinds = [
        {
            "x402Version": version,
            "scheme": protocol.SCHEME,
            "network": protocol.network_name(chain_id, version),
        }
        for version in (2, 1)
        for chain_id in with_tokens
    ]
    signer = signer_address(SIGNER)
    return JsonResponse(
        {"kinds": kinds, "extensions": [], "signers": {"eip155:*": [signer] if signer else []}}
    )


class _FacilitatorView(PlatformAPIView):
    IDEMPOTENT_METHODS: tuple[
        str, ...
    ] = ()  # each authorization is settled once by itself; a request waits for its block

    def answer(self, request) -> dict[str, Any]:
        raise NotImplementedError

    def refused(self, refusal: protocol.Refused) -> dict[str, Any]:
        raise NotImplementedError

    def post(self, request):
        try:
            body = _body(request)
        except protocol.Refused as refusal:
            return Response(self.refused(refusal), status=400)
        return Response(self.answer(body))


@extend_schema(exclude=True)
class VerifyView(_FacilitatorView):
    permissions_by_method = {"POST": Permission.READ}

    def answer(self, body) -> dict[str, Any]:
        return verify_answer(body)

    def refused(self, refusal):
        return {"isValid": False, "invalidReason": refusal.reason, "invalidMessage": refusal.message}


@extend_schema(exclude=True)
class SettleView(_FacilitatorView):
    permissions_by_method = {"POST": Permission.WRITE}

    def rate_limit_bucket(self, request) -> tuple[str, int]:
        return f"x402settle:{request.auth.pk}", settings.X402_SETTLE_RATE_LIMIT_PER_MINUTE

    def answer(self, body) -> dict[str, Any]:
        return settle_answer(
            body, organization_id=self.request.auth.organization_id, api_key_id=self.request.auth.pk
        )

    def refused(self, refusal):
        return {
            "success": False,
            "errorReason": refusal.reason,
            "errorMessage": refusal.message,
            "transaction": "",
            "network": "",
        }
