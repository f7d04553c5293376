"""What other apps (the dashboard, the x402 facilitator) may ask the checkout to do: its public writes, as the
platform API does them (payment links and their items, a product's link, discount codes), and a link's payment
made elsewhere than on its page (`link_payment_amounts`, `link_payment_order`: x402).

The checkout's public surface is this module, `selectors` (reads), `models`, `display` and `receipts`
(amounts, tokens and hashes as payers see them), `serializers` (the API's, which the dashboard's forms hand
their input to), `visits` (view counts) and `analytics`. The rest is the app's own: import-linter's
"public surface" contract refuses another app's import of it.
"""

from __future__ import annotations

from checkout.discount_api import discount_code_create, discount_code_delete, discount_code_update
from checkout.links import (
    payment_link_create,
    payment_link_delete,
    payment_link_duplicate,
    payment_link_item_add,
    payment_link_item_delete,
    payment_link_update,
    product_generate_link,
)
from checkout.payments import link_payment_amounts, link_payment_order

__all__ = [
    "discount_code_create",
    "discount_code_delete",
    "discount_code_update",
    "link_payment_amounts",
    "link_payment_order",
    "payment_link_create",
    "payment_link_delete",
    "payment_link_duplicate",
    "payment_link_item_add",
    "payment_link_item_delete",
    "payment_link_update",
    "product_generate_link",
]
