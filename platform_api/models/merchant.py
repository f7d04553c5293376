"""Id makers named by platform_api's migrations 0007-0012, from before the merchant's records moved to the
`checkout`, `merchant` and `webhooks` apps (each has its own now). Kept so that those migrations load."""

from __future__ import annotations

from core.ids import public_id, random_base62


def new_link_id() -> str:
    return public_id("pl")


def new_link_item_id() -> str:
    return public_id("pli")


def new_session_id() -> str:
    return public_id("cs")


def new_discount_code_id() -> str:
    return public_id("dc")


def new_customer_id() -> str:
    return public_id("cust")


def new_transaction_id() -> str:
    return public_id("txn")


def new_visitor_id() -> str:
    return public_id("vis")


def new_product_id() -> str:
    return public_id("prod")


def new_notification_settings_id() -> str:
    return public_id("ns")


def new_widget_id() -> str:
    return public_id("wgt")


def new_short_code() -> str:
    return random_base62(8)
