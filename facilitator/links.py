"""Payment links payable over x402: `GET /x402/pay/{short_code}`.

Without a payment, the link answers 402 with its offers (the protocol's `PaymentRequired`: version 2 in the
`PAYMENT-REQUIRED` header, version 1 as the JSON body): one per token the registry knows to take EIP-3009 on
a chain that takes payments, the merchant's own chain and token first, each for the amount the hosted page
would ask in that token (the quote and the fee, `checkout.services.link_payment_amounts`). Every offer pays
the deposit address of one order that does not exist yet: the address follows from the order's id alone
(CREATE2), so the GET draws an id and writes nothing. The offer carries that id, its expiry and an HMAC of
what it says (`extra.paymentId`, `expiresAt`, `offer`), so a payer cannot change the amount, the token or the
address of an offer and still have it taken.

A version 1 payment (`X-PAYMENT`) sends back only its network and its authorization, not the offer it
answers: the offers are therefore also kept for their lifetime in the deployment's shared cache (Redis, or
files on one machine; no database row), each under its chain and address, and a version 1 payment is read as
the version 2 payment of the offer its authorization pays. An offer the cache lost is refused as stale, and
the 402 that says so carries new ones.

With a payment (`PAYMENT-SIGNATURE`, or `X-PAYMENT`), the offer's HMAC, expiry and address are checked, the
authorization is verified as the facilitator verifies any, and then the order is made (in a checkout session
of the link, as the hosted page makes one; type `x402_swap` when the payer's chain or token is not the
merchant's) and the authorization settled through the outbox: the deposit arrives at the order's address and
the order goes the way every order goes (confirmations, sweep, delivery, webhooks, the merchant's
transaction). The answer is 200 with the payment's receipt and `PAYMENT-RESPONSE` (`X-PAYMENT-RESPONSE` in
version 1).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.utils.crypto import constant_time_compare, salted_hmac

from chains.evm import is_address
from chains.families import deposit_address
from chains.models import Token
from chains.registry import chains
from checkout.models import PaymentLink
from checkout.services import link_payment_amounts, link_payment_order
from core.errors import DomainError
from facilitator import protocol
from facilitator.protocol import Refused
from facilitator.service import failed, settle, settlement_answer
from orders.models import Order

logger = logging.getLogger(__name__)

HMAC_SALT = "facilitator.links.offer"
CROSSCHAIN_SCHEMA = {
    "type": "object",
    "properties": {
        "provider": {"type": "string"},
        "destination": {
            "type": "object",
            "properties": {
                "network": {"type": "string"},
                "asset": {"type": "string"},
                "amount": {"type": "string"},
            },
            "required": ["network", "asset", "amount"],
        },
        "origins": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "network": {"type": "string"},
                    "asset": {"type": "string"},
                    "indicativeAmount": {"type": "string"},
                    "timeEstimate": {"type": "integer"},
                },
                "required": ["network", "asset"],
            },
        },
        "expires": {"type": "string"},
    },
    "required": ["destination", "origins"],
}


@dataclass(frozen=True)
class Offer:
    token: Token
    amount: int  # what the payer authorizes
    pay_to: str
    payment_id: uuid.UUID
    price: int  # what of the link's price it pays, in the link's token
    expires_at: int

    @property
    def network(self) -> str:
        return f"eip155:{self.token.chain_id}"

    def extra_fields(self, link: PaymentLink) -> dict[str, Any]:
        return {
            "name": self.token.eip712_name,
            "version": self.token.eip712_version,
            "paymentId": str(self.payment_id),
            "price": str(self.price),
            "expiresAt": self.expires_at,
            "offer": offer_hmac(
                link,
                self.payment_id,
                self.token.chain_id,
                self.token.address,
                self.amount,
                self.price,
                self.expires_at,
            ),
        }


def offer_hmac(
    link: PaymentLink,
    payment_id: uuid.UUID,
    chain_id: int,
    asset: str,
    amount: int,
    price: int,
    expires_at: int,
) -> str:
    """The HMAC (keyed by the service's secret) of everything an offer promises."""
    said = f"{link.pk}|{payment_id}|{chain_id}|{asset.lower()}|{amount}|{price}|{expires_at}"
    return salted_hmac(HMAC_SALT, said, algorithm="sha256").hexdigest()


def link_price(link: PaymentLink, asked: str | None) -> int:
    """What the payer pays of the link, in its token: its fixed price, or `?amount=` within its bounds."""
    if link.amount is not None:
        return int(link.amount)
    if asked is None or not asked.isdigit() or len(asked) > 78:
        raise Refused(
            protocol.INVALID_REQUIREMENTS,
            "this link's payer chooses the amount: add ?amount=<smallest units of the link's token>",
        )
    amount = int(asked)
    low, high = link.min_amount, link.max_amount
    if amount <= 0 or (low is not None and amount < int(low)) or (high is not None and amount > int(high)):
        raise Refused(
            protocol.INVALID_REQUIREMENTS,
            f"amount must be from {low or 1} to {high if high is not None else 'any'}",
        )
    return amount


def link_offers(link: PaymentLink, price: int) -> list[Offer]:
    """The link's offers for `price`, one per token that takes EIP-3009 on a chain that takes payments (the
    merchant's chain and token first, then its chain's others, then the other chains'); a token the quoter
    has no route for is left out. Nothing is written."""
    payment_id = uuid.uuid4()
    expires_at = int(time.time()) + settings.X402_OFFER_SECONDS
    live = link.organization.livemode  # test mode's links are paid on test chains only
    taking = [chain.chain_id for chain in chains() if chain.accepts_payments and (live or chain.for_tests)]
    tokens = sorted(
        Token.objects.filter(eip3009=True, chain_id__in=taking),
        key=lambda t: (
            t.chain_id != link.chain_id or t.address.lower() != link.token_address.lower(),
            t.chain_id != link.chain_id,
            t.chain_id,
            t.symbol,
        ),
    )
    offers = []
    for token in tokens:
        try:
            amount, _ = link_payment_amounts(
                link=link, amount=price, src_chain=token.chain_id, src_token=token.address
            )
        except DomainError:
            continue  # no route from this token, or the provider is away
        pay_to = deposit_address(
            chain_id=token.chain_id, kind="order", identifier=str(payment_id), field="network"
        )
        offers.append(Offer(token, amount, pay_to, payment_id, price, expires_at))
    return offers


def payment_required(link: PaymentLink, offers: list[Offer], url: str, error: str) -> tuple[dict, dict]:
    """(the version 2 PaymentRequired, the version 1 one) of these offers."""
    description = link.description or link.name
    resource = {"url": url, "description": description, "mimeType": "application/json"}
    v2 = {
        "x402Version": 2,
        "error": error,
        "resource": resource,
        "accepts": [
            {
                "scheme": protocol.SCHEME,
                "network": offer.network,
                "amount": str(offer.amount),
                "asset": offer.token.address,
                "payTo": offer.pay_to,
                "maxTimeoutSeconds": settings.X402_OFFER_SECONDS,
                "extra": offer.extra_fields(link),
            }
            for offer in offers
        ],
        "extensions": _crosschain(link, offers),
    }
    v1 = {
        "x402Version": 1,
        "error": error,
        "accepts": [
            {
                "scheme": protocol.SCHEME,
                "network": protocol.network_name(offer.token.chain_id, 1),
                "maxAmountRequired": str(offer.amount),
                "resource": url,
                "description": description,
                "mimeType": "application/json",
                "payTo": offer.pay_to,
                "maxTimeoutSeconds": settings.X402_OFFER_SECONDS,
                "asset": offer.token.address,
                "extra": offer.extra_fields(link),
            }
            for offer in offers
        ],
    }
    return v2, v1


def _crosschain(link: PaymentLink, offers: list[Offer]) -> dict[str, Any]:
    """The `crosschain-swap` extension (the x402 maintainers' proposal): where the merchant is paid, and the
    other chains and tokens its `accepts` entries take (each is payable: it is in `accepts`)."""
    others = [
        offer
        for offer in offers
        if offer.token.chain_id != link.chain_id or offer.token.address.lower() != link.token_address.lower()
    ]
    if not others:
        return {}
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(offers[0].expires_at))
    return {
        "crosschain-swap": {
            "info": {
                "destination": {
                    "network": f"eip155:{link.chain_id}",
                    "asset": link.token_address,
                    "amount": str(offers[0].price),
                },
                "origins": [
                    {
                        "network": offer.network,
                        "asset": offer.token.address,
                        "indicativeAmount": str(offer.amount),
                    }
                    for offer in others
                ],
                "expires": expires,
            },
            "schema": CROSSCHAIN_SCHEMA,
        }
    }


def encode_header(value: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(value, separators=(",", ":")).encode()).decode()


def decode_header(value: str) -> dict[str, Any]:
    """A payment header's JSON object (base64 of JSON, as the protocol's transports send it)."""
    try:
        decoded = json.loads(base64.b64decode(value.strip(), validate=True))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise Refused(protocol.INVALID_PAYLOAD, "the payment header is not base64 of JSON") from None
    if not isinstance(decoded, dict):
        raise Refused(protocol.INVALID_PAYLOAD, "the payment header is not a JSON object")
    return decoded


def _offer_key(chain_id: int, pay_to: str) -> str:
    return f"x402:offer:{chain_id}:{pay_to.lower()}"


def remember_offers(accepts: list[dict[str, Any]]) -> None:
    """Keep each offer (its version 2 entry) until it expires, for a version 1 payment to name by its address.
    A cache that fails loses them: their version 1 payments are refused as stale, and nothing else is."""
    entries = {}
    for entry in accepts:
        chain_id = protocol.chain_of_network(entry["network"], 2)
        assert chain_id is not None
        entries[_offer_key(chain_id, entry["payTo"])] = entry
    try:
        caches["shared"].set_many(entries, timeout=settings.X402_OFFER_SECONDS + 1)
    except Exception as exc:  # the shared cache's backends raise their own errors (Redis, files)
        logger.warning("x402: the shared cache did not keep %d offers (%s)", len(entries), exc)


def _remembered_offer(chain_id: int, pay_to: str) -> dict[str, Any] | None:
    try:
        entry = caches["shared"].get(_offer_key(chain_id, pay_to))
    except Exception as exc:
        logger.warning("x402: the shared cache could not be read (%s)", exc)
        return None
    return entry if isinstance(entry, dict) else None


@dataclass(frozen=True)
class LinkPayment:
    payment: protocol.Payment
    payment_id: uuid.UUID
    price: int


def read_link_payment(link: PaymentLink, payload: dict[str, Any]) -> LinkPayment:
    """The payment a version 2 `PAYMENT-SIGNATURE` makes of the link: its `accepted` entry must be one of the
    link's offers, unchanged and unexpired, paying the address its payment id gives; `Refused` otherwise."""
    if payload.get("x402Version") != 2:
        raise Refused(protocol.INVALID_VERSION, "PAYMENT-SIGNATURE carries a version 2 payment payload")
    accepted = payload.get("accepted")
    extra = accepted.get("extra") if isinstance(accepted, dict) else None
    if not isinstance(accepted, dict) or not isinstance(extra, dict):
        raise Refused(protocol.INVALID_PAYLOAD, "paymentPayload.accepted must be one of the link's offers")
    payment = protocol.read_request(
        {"x402Version": 2, "paymentPayload": payload, "paymentRequirements": accepted}
    )
    try:
        payment_id = uuid.UUID(str(extra.get("paymentId")))
        price, expires_at = int(str(extra.get("price"))), int(str(extra.get("expiresAt")))
    except ValueError:
        raise Refused(
            protocol.INVALID_REQUIREMENTS, "the accepted entry is not an offer of this link"
        ) from None
    expected = offer_hmac(
        link, payment_id, payment.chain_id, payment.asset, payment.amount, price, expires_at
    )
    if not constant_time_compare(expected, str(extra.get("offer") or "")):
        raise Refused(
            protocol.INVALID_REQUIREMENTS, "the accepted entry is not an offer of this link, as it was made"
        )
    if expires_at < time.time():
        raise Refused(protocol.INVALID_REQUIREMENTS, "the offer expired: ask the link again for a new one")
    try:
        address = deposit_address(
            chain_id=payment.chain_id, kind="order", identifier=str(payment_id), field="network"
        )
    except DomainError:
        raise Refused(protocol.INVALID_NETWORK, f"{payment.network} takes no payments now") from None
    if address != payment.pay_to:
        raise Refused(protocol.RECIPIENT_MISMATCH, "the offer's payTo is not its payment's address")
    return LinkPayment(payment=payment, payment_id=payment_id, price=price)


def read_v1_link_payment(link: PaymentLink, payload: dict[str, Any]) -> LinkPayment:
    """The payment a version 1 `X-PAYMENT` makes of the link: the offer its authorization pays (on its network,
    to its address), kept since the link made it, read as `read_link_payment` reads a version 2 payment of
    that offer; `Refused` otherwise. Its settlement and answers are version 1's."""
    if payload.get("x402Version") != 1:
        raise Refused(protocol.INVALID_VERSION, "X-PAYMENT carries a version 1 payment payload")
    chain_id = protocol.chain_of_network(payload.get("network"), 1)
    inner = payload.get("payload")
    authorization = inner.get("authorization") if isinstance(inner, dict) else None
    to = authorization.get("to") if isinstance(authorization, dict) else None
    if chain_id is None or not isinstance(to, str) or not is_address(to):
        raise Refused(
            protocol.INVALID_PAYLOAD, "X-PAYMENT must name a network and an authorization to an address"
        )
    accepted = _remembered_offer(chain_id, to)
    if accepted is None:
        raise Refused(
            protocol.INVALID_REQUIREMENTS,
            "no offer of this link pays that address now (it expired, or was never made): ask the link again",
        )
    if payload.get("scheme") != accepted.get("scheme"):
        raise Refused(protocol.INVALID_SCHEME, "the payment's scheme is not its offer's `exact`")
    paid = read_link_payment(link, {"x402Version": 2, "accepted": accepted, "payload": inner})
    v1 = replace(paid.payment, version=1, network=protocol.network_name(chain_id, 1))
    return replace(paid, payment=v1)


@dataclass(frozen=True)
class Answer:
    """What a payer's endpoint answers: its status, its JSON and its headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str]


def link_unpayable(link: PaymentLink) -> Answer | None:
    """Why a link cannot be paid over x402 now (410: inactive, expired, used up; 409: it asks its payer for a
    form or a shipping address, which only its page collects), or None."""
    reason = link.unavailable_reason()
    if reason:
        return Answer(410, {"error": reason}, {})
    if link.collect_shipping_address or (link.form_schema or {}).get("fields"):
        error = "This link asks its payer for details (a form or a shipping address): pay it on its page."
        return Answer(409, {"error": error}, {})
    return None


def _offered(
    link: PaymentLink, price: int, url: str, error: str, headers: dict[str, str] | None = None
) -> Answer:
    """402 with the link's offers (new ones: another payment, kept for a version 1 payer), `error` saying
    why."""
    v2, v1 = payment_required(link, link_offers(link, price), url, error)
    remember_offers(v2["accepts"])
    return Answer(402, v1, {"PAYMENT-REQUIRED": encode_header(v2), **(headers or {})})


def pay_link(
    link: PaymentLink,
    *,
    asked_amount: str | None,
    url: str,
    signature: str | None,
    v1_signature: str | None,
    payer_ip: str,
) -> Answer:
    """A request of a link over x402: without a payment, its offers; with one (`PAYMENT-SIGNATURE`, or version
    1's `X-PAYMENT`), the offer and the authorization checked, the order made and the authorization settled
    (`service.settle`), then 200 with the receipt; any refusal is a new 402 saying why, with the payment
    response header once something was tried."""
    try:
        price = link_price(link, asked_amount)
    except Refused as refused:
        return Answer(400, {"error": refused.message, "reason": refused.reason}, {})
    if not signature and not v1_signature:
        return _offered(link, price, url, "PAYMENT-SIGNATURE header is required")
    response_header = "PAYMENT-RESPONSE" if signature else "X-PAYMENT-RESPONSE"
    try:
        if signature:
            paid = read_link_payment(link, decode_header(signature))
        else:
            assert v1_signature is not None
            paid = read_v1_link_payment(link, decode_header(v1_signature))
        if paid.price != price:
            raise Refused(protocol.INVALID_REQUIREMENTS, "the offer was made for another amount")
    except Refused as refused:
        return _offered(link, price, url, f"{refused.reason}: {refused.message}")
    payment = paid.payment

    def make_order() -> None:
        try:
            link_payment_order(
                link=link,
                amount=price,
                src_chain=payment.chain_id,
                src_token=payment.asset,
                src_amount=payment.amount,
                order_id=paid.payment_id,
                payer_ip=payer_ip,
            )
        except DomainError as exc:
            raise Refused(
                protocol.INVALID_REQUIREMENTS, str(exc), payer=payment.authorization.payer
            ) from None

    try:
        row, refusal = settle(
            payment, organization_id=link.organization_id, api_key_id=None, prepare=make_order
        )
    except Refused as refused:
        row, refusal = None, refused
    if row is None:
        assert refusal is not None
        answer = failed(refusal, payment.network)
    else:
        answer = settlement_answer(row, payment.network)
    if not answer["success"]:
        error = f"{answer['errorReason']}: {answer.get('errorMessage', '')}"
        return _offered(link, price, url, error, {response_header: encode_header(answer)})
    return Answer(200, _receipt(link, paid, price, answer), {response_header: encode_header(answer)})


def _receipt(link: PaymentLink, paid: LinkPayment, price: int, answer: dict[str, Any]) -> dict[str, Any]:
    payment = paid.payment
    order = Order.objects.filter(pk=paid.payment_id).select_related("session_order").first()
    session_order = getattr(order, "session_order", None) if order else None
    return {
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
