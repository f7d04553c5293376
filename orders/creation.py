"""Creating an order: its deposit address, its fee and points, its onramp, watched until it is paid."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from chains.families import deposit_address
from chains.keys import OwnerKind, owner_of
from chains.tokens import check_amount_worth, token_get
from chains.watcher import watch_address
from core.errors import Conflict
from orders import bodies, events, fees
from orders.inputs import OrderRequest
from orders.lifecycle import WATCH_AFTER_EXPIRY
from orders.models import Order
from orders.onramps import get_onramp_adapter
from orders.providers import token_shape
from platform_api import testmode
from platform_api.models import Organization


def _onramp_metadata(onramp: dict | None, *, payer_ip: str, fingerprint: dict | None) -> dict | None:
    if not onramp:
        return None
    metadata = {k: v for k, v in onramp.items() if k != "fingerprint"}
    metadata["ipAddress"] = payer_ip
    chosen = onramp.get("fingerprint") or fingerprint
    if chosen:
        metadata["fingerprint"] = dict(chosen)
    return metadata


def with_token_shapes(request: OrderRequest) -> dict[str, Any]:
    """The order's `metadata` with `srcToken` and `dstToken` (the contract's Token shape) from the registry,
    where the caller (the hosted checkout, a widget) named only the addresses."""
    metadata = dict(request.metadata)
    sides = {
        "srcToken": (request.src_chain, request.src_token_address),
        "dstToken": (request.dst_chain, request.dst_token_address),
    }
    for side, (chain_id, address) in sides.items():  # token_get: the lookups the checks made a moment ago
        if side not in metadata and (token := token_get(chain_id=chain_id, address=address)) is not None:
            metadata[side] = token_shape(token)
    return metadata


def order_create(
    *,
    organization: Organization | None,
    request: OrderRequest,
    payer_ip: str,
    fingerprint: dict | None = None,
    owner: str = "",
    fixed_price: bool = False,
    order_id: uuid.UUID | None = None,
) -> Order:
    """Create an order with its own deposit address, linked to an open checkout session if one is named.

    `order_id` is given by a caller that showed the order's deposit address before the order existed (an x402
    offer: the address follows from the id alone); otherwise a new one is drawn.

    `owner` names the app above that created the order and follows it
    (`orders.events`); `fixed_price` sends back what arrives beyond its price.
    Vendor calls (an onramp session token, a card payment intent) happen
    before the database transaction, so no lock is held while a vendor
    answers; the session is checked before them and again under its row lock.
    """
    session_id = request.checkout_session_id
    owner_now = organization
    if (
        session_id
    ):  # the checkout's session (orders.events.bind_session): checked now, and again under its lock
        owner_now = events.bind_session(session_id, organization, lock=False)
    # A test-mode organization's payments go through test chains only, whatever asked for them.
    testmode.ensure_test_chains(owner_now, {"srcChain": request.src_chain, "dstChain": request.dst_chain})
    check_amount_worth(
        chain_id=request.src_chain,
        address=request.src_token_address,
        amount=request.src_amount,
        field="srcAmount",
    )
    order_id = order_id or uuid.uuid4()
    global_address = deposit_address(
        chain_id=request.src_chain, kind="order", identifier=str(order_id), field="srcChain"
    )
    balance = fees.recipient_discount_balance(request.recipient_address)
    usd_value = fees.token_usd_value(
        chain_id=request.src_chain, address=request.src_token_address, amount=request.src_amount
    )
    extras = get_onramp_adapter().order_extras(
        order_id=str(order_id),
        global_address=global_address,
        request=request,
        payer_ip=payer_ip,
        usd_value=usd_value,
        recipient_balance=balance,
    )
    onramp_metadata = _onramp_metadata(request.onramp, payer_ip=payer_ip, fingerprint=fingerprint)
    if onramp_metadata is not None:
        onramp_metadata.update(extras.pop("onramp_metadata", {}))
    points_amount, _ = fees.points_for(usd_value=usd_value, recipient_balance=balance)
    fee = (
        extras.pop("fee", None) or fees.standard_fee(usd_value=usd_value, recipient_balance=balance).as_dict()
    )
    now = timezone.now()
    try:
        with transaction.atomic():
            if session_id:
                organization = events.bind_session(session_id, organization, lock=True)
            order = Order.objects.create(
                id=order_id,
                organization=organization,
                checkout_session_id=session_id,
                owner=owner,
                fixed_price=fixed_price,
                type=request.type,
                recipient_address=request.recipient_address,
                refund_address=request.refund_address,
                global_address=global_address,
                src_chain=request.src_chain,
                dst_chain=request.dst_chain,
                src_token_address=request.src_token_address,
                dst_token_address=request.dst_token_address,
                src_amount=request.src_amount,
                created_at=now,
                expired_at=now + timedelta(seconds=settings.ORDER_LIFETIME_SECONDS),
                creator_address=request.creator_address.lower() or None,
                partner_id=request.partner_id,
                client_reference_id=request.client_reference_id,
                onramp_metadata=onramp_metadata,
                payload=request.payload,
                metadata=with_token_shapes(request),
                action=request.action or request.payload.get("action"),
                fee=fee,
                points_amount=points_amount,
                **extras,
            )
            watch_address(
                chain_id=order.src_chain,
                address=order.global_address,
                owner=owner_of(OwnerKind.ORDER, order.pk),
                watch_until=order.expired_at + WATCH_AFTER_EXPIRY,
            )
            bodies.created(order)
            return order
    except IntegrityError:
        # Two requests raced for the same session; the unique constraint let one through.
        raise Conflict("this checkout session already has an order.", field="checkoutSessionId") from None
