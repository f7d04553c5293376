"""Reads of the refunds: an organization's, filtered; one; its refund balance."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from platform_api.models import Organization
from platform_api.selectors import scoped_get
from refunds.models import Refund, RefundBalance


def refund_list(
    *,
    organization: Organization,
    status: str | None = None,
    transaction: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
) -> QuerySet[Refund]:
    refunds = Refund.objects.filter(organization=organization)
    if status:
        refunds = refunds.filter(status=status)
    if transaction:
        refunds = refunds.filter(payment_id=transaction)
    if created_from is not None:
        refunds = refunds.filter(created_at__gte=created_from)
    if created_to is not None:
        refunds = refunds.filter(created_at__lte=created_to)
    return refunds


def refund_get(*, organization: Organization, refund_id: str) -> Refund:
    return scoped_get(
        Refund.objects.select_related("organization"),
        organization=organization,
        resource_type="refund",
        resource_id=refund_id,
    )


def refund_balances(*, organization: Organization) -> QuerySet[RefundBalance]:
    return RefundBalance.objects.filter(organization=organization).order_by("chain_id", "token_address")
