"""Discount codes: what a code takes off an amount, and its uses, which never pass `max_uses`.

A checkout that applies a code holds one of its uses (`reserved_uses`) with a
conditional update: `current_uses + reserved_uses < max_uses`. Completing the
payment turns the hold into a use; expiring or failing releases it. So
however many payers complete at once, `current_uses` never passes
`max_uses`, and validation never uses a code up.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, Q
from django.utils import timezone

from checkout.models import DiscountCode
from platform_api.models import Organization

INVALID = "Invalid discount code"
INACTIVE = "Discount code is not active"
EXPIRED = "Discount code has expired"
USED_UP = "Code has reached maximum number of uses"
WRONG_LINK = "Code is not valid for this payment link"
BELOW_MINIMUM = "Order amount is below minimum required"


class DiscountRefused(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Discount:
    code: DiscountCode
    amount: int  # taken off, in the token's smallest unit

    def final(self, amount: int) -> int:
        return amount - self.amount


def discount_amount(code: DiscountCode, amount: int) -> int:
    if code.type == DiscountCode.Type.PERCENTAGE:
        return amount * int(code.value) // 100
    return min(int(code.value), amount)


def discount_evaluate(
    *, organization: Organization, code: str, payment_link_id: str | None, amount: int
) -> Discount:
    """What `code` takes off `amount` for this link, or DiscountRefused with the reason; changes nothing."""
    found = DiscountCode.objects.filter(
        organization=organization, code=code.strip().upper(), deleted_at__isnull=True
    ).first()
    if found is None:
        raise DiscountRefused(INVALID)
    if not found.is_active:
        raise DiscountRefused(INACTIVE)
    if found.expires_at is not None and found.expires_at <= timezone.now():
        raise DiscountRefused(EXPIRED)
    if found.max_uses is not None and found.current_uses + found.reserved_uses >= found.max_uses:
        raise DiscountRefused(USED_UP)
    if found.payment_link_id and found.payment_link_id != payment_link_id:
        raise DiscountRefused(WRONG_LINK)
    if found.min_order_amount is not None and amount < int(found.min_order_amount):
        raise DiscountRefused(BELOW_MINIMUM)
    return Discount(code=found, amount=discount_amount(found, amount))


def discount_reserve(code: DiscountCode) -> bool:
    """Hold one use for a checkout in flight; False when every use is taken or held."""
    room = Q(max_uses__isnull=True) | Q(max_uses__gt=F("current_uses") + F("reserved_uses"))
    return (
        DiscountCode.objects.filter(room, pk=code.pk, is_active=True, deleted_at__isnull=True).update(
            reserved_uses=F("reserved_uses") + 1
        )
        == 1
    )


def discount_release(code_id: str) -> None:
    """The checkout that held a use expired or failed."""
    DiscountCode.objects.filter(pk=code_id, reserved_uses__gt=0).update(reserved_uses=F("reserved_uses") - 1)


def discount_redeem(code_id: str) -> None:
    """The checkout that held a use completed: the hold becomes a use (the check constraint backs the bound)."""
    DiscountCode.objects.filter(pk=code_id, reserved_uses__gt=0).update(
        reserved_uses=F("reserved_uses") - 1, current_uses=F("current_uses") + 1, updated_at=timezone.now()
    )
