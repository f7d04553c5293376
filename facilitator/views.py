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

from chains.models import Token
from chains.registry import chains
from chains.signers import signer_address
from chains.tokens import token_get
from checkout.models import CheckoutSession
from checkout.selectors import payment_link_by_code
from checkout.services import link_payment_order
from core.errors import DomainError
from core.http import client_ip, ip_digest
from facilitator import links, protocol
from facilitator.models import Settlement
from facilitator.service import SIGNER, settle, settle_answer, settlement_answer, verify_answer
from orders.models import Order
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


def _json(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> JsonResponse:
    response = JsonResponse(body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    response["Access-Control-Expose-Headers"] = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE"
    response["Cache-Control"] = "no-store"
    return response


def _offer(link, price: int, url: str, error: str, headers: dict[str, str] | None = None) -> JsonResponse:
    v2, v1 = links.payment_required(link, links.link_offers(link, price), url, error)
    return _json(v1, 402, {"PAYMENT-REQUIRED": links.encode_header(v2), **(headers or {})})


@require_GET
def pay_link(request: HttpRequest, short_code: str) -> JsonResponse:
    """A payment link over x402 (facilitator.links): 402 with its offers; paid, 200 with the receipt."""
    link = payment_link_by_code(short_code)
    if link is None:
        return _json({"error": "There is no payment link at this address."}, 404)
    reason = link.unavailable_reason()
    if reason:
        return _json({"error": reason}, 410)
    if link.collect_shipping_address or (link.form_schema or {}).get("fields"):
        return _json(
            {
                "error": "This link asks its payer for details (a form or a shipping address): pay it on its page."
            },
            409,
        )
    limit = settings.X402_PAY_RATE_LIMIT_PER_MINUTE
    state = ratelimit.hit(f"x402pay:{ip_digest(client_ip(request))}", limit)
    if not state.allowed:
        return _json(
            {"error": f"Too many requests from this address: try again in {state.retry_after} seconds."},
            429,
            {"Retry-After": str(state.retry_after), **state.headers()},
        )
    try:
        price = links.link_price(link, request.GET.get("amount"))
    except protocol.Refused as refused:
        return _json({"error": refused.message, "reason": refused.reason}, 400)
    url = request.build_absolute_uri()
    signature = request.headers.get("PAYMENT-SIGNATURE")
    if not signature:
        error = "PAYMENT-SIGNATURE header is required"
        if request.headers.get("X-PAYMENT"):
            error = (
                "invalid_x402_version: a payment link's offers are per payment; pay them with a version 2 "
                "client (PAYMENT-SIGNATURE), which sends back the offer it accepted"
            )
        return _offer(link, price, url, error)
    try:
        paid = links.read_link_payment(link, links.decode_header(signature))
        if paid.price != price:
            raise protocol.Refused(protocol.INVALID_REQUIREMENTS, "the offer was made for another amount")
    except protocol.Refused as refused:
        return _offer(link, price, url, f"{refused.reason}: {refused.message}")
    payment = paid.payment

    def make_order(_checked) -> None:
        try:
            link_payment_order(
                link=link,
                amount=price,
                src_chain=payment.chain_id,
                src_token=payment.asset,
                src_amount=payment.amount,
                order_id=paid.payment_id,
                payer_ip=client_ip(request),
            )
        except DomainError as exc:
            raise protocol.Refused(
                protocol.INVALID_REQUIREMENTS, str(exc), payer=payment.authorization.payer
            ) from None

    try:
        row, refusal = settle(
            payment, organization_id=link.organization_id, api_key_id=None, prepare=make_order
        )
    except protocol.Refused as refused:
        row, refusal = None, refused
    if row is None:
        assert refusal is not None
        failure = {
            "success": False,
            "errorReason": refusal.reason,
            "errorMessage": refusal.message,
            "transaction": "",
            "network": payment.network,
        }
        return _offer(
            link,
            price,
            url,
            f"{refusal.reason}: {refusal.message}",
            {"PAYMENT-RESPONSE": links.encode_header(failure)},
        )
    answer = settlement_answer(row, payment.network)
    if not answer["success"]:
        return _offer(
            link,
            price,
            url,
            f"{answer['errorReason']}: {answer.get('errorMessage', '')}",
            {"PAYMENT-RESPONSE": links.encode_header(answer)},
        )
    order = Order.objects.filter(pk=paid.payment_id).select_related("session_order").first()
    session_order = getattr(order, "session_order", None) if order else None
    receipt = {
        "paymentId": str(paid.payment_id),
        "orderId": str(paid.payment_id),
        "checkoutSessionId": session_order.session_id if session_order else None,
        "status": order.status if order else None,
        "network": payment.network,
        "asset": payment.asset,
        "amount": str(payment.amount),
        "payer": payment.authorization.payer,
        "transaction": answer["transaction"],
        "merchant": {"network": f"eip155:{link.chain_id}", "asset": link.token_address, "amount": str(price)},
    }
    return _json(receipt, 200, {"PAYMENT-RESPONSE": links.encode_header(answer)})


@csrf_exempt  # no cookie acts here: the payer's signature is the only authority, and it names the payment
@require_POST
def checkout_authorization(request: HttpRequest, session_id: str) -> JsonResponse:
    """The hosted page's payment by signature: the payer's EIP-3009 authorization of (at most) what the
    session's waiting order still asks, to its deposit address, submitted by the service, which pays the gas
    (facilitator.service.settle). The deposit then arrives as any other. Answers once the transaction is in a
    block (or after X402_SETTLE_WAIT_SECONDS, `pending`); a refusal is 400 with the reason and a sentence."""
    limit = settings.X402_PAY_RATE_LIMIT_PER_MINUTE
    state = ratelimit.hit(f"x402page:{ip_digest(client_ip(request))}", limit)
    if not state.allowed:
        return _json({"error": f"Too many requests: try again in {state.retry_after} seconds."}, 429)
    session = CheckoutSession.objects.filter(pk=session_id).first()
    if session is None:
        return _json({"error": "There is no checkout at this address."}, 404)
    order = Order.objects.filter(session_order__session=session, status=Order.Status.SCANNING_DEPOSIT).first()
    if order is None or session.status != CheckoutSession.Status.OPEN:
        return _json({"error": "This checkout awaits no payment now."}, 409)
    token = token_get(chain_id=order.src_chain, address=order.src_token_address)
    if token is None or not token.eip3009:
        return _json({"error": "This token cannot be paid by signature: send it from the wallet."}, 400)
    try:
        body = _body(request)
        authorization = body.get("authorization") if isinstance(body, dict) else None
        value = protocol.uint_of(authorization.get("value") if isinstance(authorization, dict) else None)
        received = sum(
            int(a) for a in order.deposit_txs.filter(counted=True).values_list("amount", flat=True)
        )
        remaining = int(order.src_amount) - received
        if not 0 < value <= remaining:
            raise protocol.Refused(
                protocol.VALUE_MISMATCH, f"the authorization must be for at most what is owed, {remaining}"
            )
        required = {
            "scheme": protocol.SCHEME,
            "network": f"eip155:{order.src_chain}",
            "amount": str(value),
            "asset": token.address,
            "payTo": order.global_address,
            "maxTimeoutSeconds": settings.X402_OFFER_SECONDS,
            "extra": {"name": token.eip712_name, "version": token.eip712_version},
        }
        payment = protocol.read_request(
            {
                "x402Version": 2,
                "paymentPayload": {
                    "x402Version": 2,
                    "accepted": required,
                    "payload": {"authorization": authorization, "signature": body.get("signature")},
                },
                "paymentRequirements": required,
            }
        )
        row, refusal = settle(payment, organization_id=session.organization_id, api_key_id=None)
    except protocol.Refused as refused:
        row, refusal = None, refused
    if row is None:
        assert refusal is not None
        return _json({"error": refusal.message, "reason": refusal.reason}, 400)
    answer = settlement_answer(row, payment.network)
    if not answer["success"] and row.status == Settlement.Status.FAILED:
        return _json({"error": answer.get("errorMessage", ""), "reason": answer["errorReason"]}, 400)
    return _json({"status": row.status, "transaction": row.tx_hash}, 200)
