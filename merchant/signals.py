"""How the apps above learn of the merchant's writes without the merchant importing them."""

from __future__ import annotations

from django.dispatch import Signal

# kwargs: customer. Sent in the transaction that erases a customer's personal data (`customer_erase`), so
# that the checkout erases what its sessions and transactions keep of it too.
customer_erased = Signal()

# kwargs: organization, before, after (each {"default_recipient_address", "default_chain_id",
# "default_token_address"}), actor. Sent in the transaction that changes where an organization's payouts go
# by default, whoever changed them (an API key, a member, staff), so that its owners are told.
payout_defaults_changed = Signal()
