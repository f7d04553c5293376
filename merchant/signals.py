"""How the apps above learn of the merchant's writes without the merchant importing them."""

from __future__ import annotations

from django.dispatch import Signal

# kwargs: customer. Sent in the transaction that erases a customer's personal data (`customer_erase`), so
# that the checkout erases what its sessions and transactions keep of it too.
customer_erased = Signal()
