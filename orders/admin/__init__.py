"""The orders app's admin, one module per page: orders and stuck orders (`order`), unattributed deposits
(`unattributed`), the solver's inventories (`inventory`), the relay provider's fast fills (`fast_fills`), and
what their cells show (`cells`)."""

from django.conf import settings
from django.contrib import admin

from orders.admin import fast_fills, inventory, order, unattributed  # noqa: F401 - each registers its pages

_offline = [
    name
    for name, value in (("quotes", settings.QUOTE_PROVIDER), ("chain reads", settings.CHAIN_READER))
    if value == "offline"
]
if _offline:
    # Staff must never mistake development pricing for real pricing.
    admin.site.site_header = f"Checkout administration — OFFLINE providers: {', '.join(_offline)}"
