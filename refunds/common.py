"""What the refunds' modules share beneath their services (so the top-ups and withdrawals, which the services
offer, do not import them back): the permission check, the owner kind of a refund's address, and crediting
the refund balance."""

from __future__ import annotations

from django.utils import timezone

from core.errors import Forbidden
from platform_api.context import RequestContext
from refunds.models import RefundBalance

REFUND_OWNER = "refund"  # watched addresses' owner kind and the CREATE2 salt's kind of a refund's address


def may(ctx: RequestContext, permission: str, what: str) -> None:
    """Refuse (403) a caller whose key or member role is below `permission`, whichever interface called."""
    if not ctx.allows(permission):
        raise Forbidden(f"{what} needs the '{permission}' permission.")


def refund_balance_credit(*, organization_id: str, chain_id: int, token_address: str, amount: int) -> None:
    """Add `amount` to the organization's refund balance in the token (a failed delivery's amount, a top-up)."""
    row, _ = RefundBalance.objects.select_for_update().get_or_create(
        organization_id=organization_id, chain_id=chain_id, token_address=token_address
    )
    RefundBalance.objects.filter(pk=row.pk).update(amount=int(row.amount) + amount, updated_at=timezone.now())
