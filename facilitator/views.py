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
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from checkout.selectors import payment_link_by_code
from core.http import client_ip, ip_digest
from facilitator import links, protocol
from facilitator.hosted import signed_checkout_payment
from facilitator.service import settle_answer, verify_answer
from facilitator.verification import supported_kinds
from platform_api import ratelimit
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
    return JsonResponse(supported_kinds())


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


def _json(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> JsonResponse:
    response = JsonResponse(body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    response["Access-Control-Expose-Headers"] = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE"
    response["Cache-Control"] = "no-store"
    return response


def _limited(request: HttpRequest, bucket: str) -> JsonResponse | None:
    """429 past X402_PAY_RATE_LIMIT_PER_MINUTE requests of a payer's endpoint from one client address."""
    state = ratelimit.hit(
        f"{bucket}:{ip_digest(client_ip(request))}", settings.X402_PAY_RATE_LIMIT_PER_MINUTE
    )
    if state.allowed:
        return None
    return _json(
        {"error": f"Too many requests from this address: try again in {state.retry_after} seconds."},
        429,
        {"Retry-After": str(state.retry_after), **state.headers()},
    )


@require_GET
def pay_link(request: HttpRequest, short_code: str) -> JsonResponse:
    """A payment link over x402 (facilitator.links): 402 with its offers; paid, 200 with the receipt."""
    link = payment_link_by_code(short_code)
    if link is None:
        return _json({"error": "There is no payment link at this address."}, 404)
    unpayable = links.link_unpayable(link)
    if unpayable is not None:
        return _json(unpayable.body, unpayable.status)
    limited = _limited(request, "x402pay")
    if limited is not None:
        return limited
    answer = links.pay_link(
        link,
        asked_amount=request.GET.get("amount"),
        url=request.build_absolute_uri(),
        signature=request.headers.get("PAYMENT-SIGNATURE"),
        v1_signature=request.headers.get("X-PAYMENT"),
        payer_ip=client_ip(request),
    )
    return _json(answer.body, answer.status, answer.headers)


@csrf_exempt  # no cookie acts here: the payer's signature is the only authority, and it names the payment
@require_POST
def checkout_authorization(request: HttpRequest, session_id: str) -> JsonResponse:
    """The hosted page's payment by signature (facilitator.hosted)."""
    refused = _limited(request, "x402page")
    if refused is not None:
        return refused
    try:
        body = _body(request)
    except protocol.Refused as refusal:
        return _json({"error": refusal.message, "reason": refusal.reason}, 400)
    answer = signed_checkout_payment(session_id, body)
    return _json(answer.body, answer.status)
