"""Reads of the refunds: an organization's, filtered; one; its refund balance."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from checkout.models import Transaction
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
        refunds = refunds.filter(payment_id=payment_of(organization, transaction))
    if created_from is not None:
        refunds = refunds.filter(created_at__gte=created_from)
    if created_to is not None:
        refunds = refunds.filter(created_at__lte=created_to)
    return refunds


def payment_of(organization: Organization, payment_id: str) -> str:
    """The id a payment's refunds are recorded under: a quick payment's own (`qp_`), also when it is named by
    the transaction that records it in the books (`txn_`), so that both names share one refundable amount."""
    if payment_id.startswith("txn_"):
        quick = (
            Transaction.objects.filter(organization=organization, pk=payment_id)
            .values_list("quick_payment_id", flat=True)
            .first()
        )
        return quick or payment_id
    return payment_id


def refund_get(*, organization: Organization, refund_id: str) -> Refund:
    return scoped_get(
        Refund.objects.select_related("organization"),
        organization=organization,
        resource_type="refund",
        resource_id=refund_id,
    )


def refund_balances(*, organization: Organization) -> QuerySet[RefundBalance]:
    return RefundBalance.objects.filter(organization=organization).order_by("chain_id", "token_address")
