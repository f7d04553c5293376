"""The query strings of the checkout's lists, each parsed by its filter serializer (platform_api.filters)."""

from __future__ import annotations

from checkout.models import Transaction
from checkout.selectors import SESSION_STATUS_FILTERS
from platform_api.filters import (
    BoolFilter,
    ChoiceFilter,
    CreatedWindowFilters,
    FilterSerializer,
    IdFilter,
    TextFilter,
    WholeNumberFilter,
)


class PaymentLinkFilters(FilterSerializer):
    search = TextFilter()
    active = BoolFilter()


class SessionFilters(CreatedWindowFilters):
    status = ChoiceFilter(SESSION_STATUS_FILTERS)


class PlatformSessionFilters(SessionFilters):
    payment_link_id = IdFilter()


class TransactionFilters(CreatedWindowFilters):
    status = ChoiceFilter(Transaction.Status.values)
    chain_id = WholeNumberFilter()
    customer_id = IdFilter()
    payment_link_id = IdFilter()
