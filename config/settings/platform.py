"""The platform interface: REST framework and OpenAPI, rate limits, idempotency, audit retention,
quick pay, and where payers reach the hosted pages."""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

from config.settings.chains import SUPPORTED_CHAIN_IDS
from config.settings.django import ALLOWED_HOSTS, DEVELOPMENT
from config.settings.env import env_int, env_list

# --- REST framework and OpenAPI ---------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.inputs.StrictJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "platform_api.errors.platform_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "core.openapi.AutoSchema",
    # `?format=` is the exports' own parameter (csv or json), not DRF's renderer override.
    "URL_FORMAT_OVERRIDE": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Cross-chain checkout service",
    "DESCRIPTION": (
        "Order interface (`/orders`, `/checkout-sessions`, `/chains/...`, `/onramp/...`) with the envelope "
        "`{success, message, data, statusCode}`, and the merchant platform interface under `/api/v1` with "
        "Stripe-style errors `{error: {type, code, message, param}}`. Platform calls authenticate with "
        "`Authorization: Bearer svc_live_...` (a test-mode key: `svc_test_...`) or `X-API-Key`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # What the path converters of core.inputs accept, stated for every path that uses them.
    "PATH_CONVERTER_OVERRIDES": {
        "public_id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
        "int64": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
    },
    "ENUM_NAME_OVERRIDES": {
        "PlatformErrorCodeEnum": "platform_api.serializers.ERROR_CODES",
        "PlatformErrorTypeEnum": "platform_api.serializers.ERROR_TYPES",
        "DiscountTypeEnum": ["percentage", "fixed"],
        # The `type` of each order type's request shape (a one-value enum, named after the type) is added
        # from the order types' registry when the orders app is ready (orders.apps).
        "OnrampVendorEnum": "orders.serializers.orders.ONRAMP_VENDORS",
        "OrderStatusEnum": "orders.models.Order.Status",
        "OrderTypeEnum": "orders.models.Order.Type",
        "CheckoutSessionStatusEnum": "checkout.interface_views.STATUSES",
        "RelayTxStatusEnum": "orders.models.RelayTx.Status",
        "RefundTxStatusEnum": "orders.models.RefundTx.Status",
    },
}
# One name for the chain-id enum of every field that takes a supported chain.
_enum_names = SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]
assert isinstance(_enum_names, dict)
_enum_names["SupportedChainIdEnum"] = [(c, c) for c in SUPPORTED_CHAIN_IDS]

# --- Platform behaviour -----------------------------------------------------

PLATFORM_RATE_LIMIT_PER_MINUTE = env_int("PLATFORM_RATE_LIMIT_PER_MINUTE", 120)
QUICK_PAY_RATE_LIMIT_PER_MINUTE = env_int("QUICK_PAY_RATE_LIMIT_PER_MINUTE", 5)
# GET /quick-pay/{id}: a payer's page polls it.
QUICK_PAY_READ_RATE_LIMIT_PER_MINUTE = env_int("QUICK_PAY_READ_RATE_LIMIT_PER_MINUTE", 120)
ORDER_WRITE_RATE_LIMIT_PER_MINUTE = env_int("ORDER_WRITE_RATE_LIMIT_PER_MINUTE", 300)
# Checkouts started from the hosted page or a widget (each makes a session or an order with its own deposit
# address to watch), per client IP: a payer starts one or two; a script starting thousands is refused.
HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE = env_int("HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE", 10)
# Requests with an invalid, expired or revoked key, per client IP, on both interfaces.
AUTH_FAILURE_RATE_LIMIT_PER_MINUTE = env_int("AUTH_FAILURE_RATE_LIMIT_PER_MINUTE", 20)
IDEMPOTENCY_KEY_TTL_SECONDS = env_int("IDEMPOTENCY_KEY_TTL_SECONDS", 24 * 3600)
API_KEY_LAST_USED_RESOLUTION_SECONDS = 60
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 90)
AUDIT_PURGE_BATCH_SIZE = env_int("AUDIT_PURGE_BATCH_SIZE", 1000)
QUICK_PAY_TTL_SECONDS = env_int("QUICK_PAY_TTL_SECONDS", 15 * 60)
# A refund awaiting its funding (a deposit to its own address) is canceled after this (refunds.services).
REFUND_FUNDING_SECONDS = env_int("REFUND_FUNDING_SECONDS", 24 * 3600)

# Merchant resources: where payers reach the hosted checkout page (`{PUBLIC_BASE_URL}/pay/...`). In
# production it defaults to https:// and the first of DJANGO_ALLOWED_HOSTS.
_first_host = next((host for host in ALLOWED_HOSTS if host not in ("*",) and not host.startswith(".")), "")
PUBLIC_BASE_URL = os.environ.get(
    "PUBLIC_BASE_URL",
    f"http://127.0.0.1:{os.environ.get('PORT', '8000')}" if DEVELOPMENT else f"https://{_first_host}",
).rstrip("/")
CHECKOUT_SESSION_DEFAULT_TTL_SECONDS = env_int("CHECKOUT_SESSION_DEFAULT_TTL_SECONDS", 1800)

# --- x402 facilitator (x402/) -------------------------------------------------

# POST /x402/settle spends the service's gas: each key may settle this many authorizations a minute.
X402_SETTLE_RATE_LIMIT_PER_MINUTE = env_int("X402_SETTLE_RATE_LIMIT_PER_MINUTE", 60)
# How long a settle request waits for its transaction to be in a block before it answers `settlement_pending`
# (the same request again answers the outcome; nothing is sent twice).
X402_SETTLE_WAIT_SECONDS = env_int("X402_SETTLE_WAIT_SECONDS", 30)
# A key whose settlements reverted on chain (each at the vault's gas) this many times within the window is
# refused settling until the window has passed.
X402_REVERTED_PER_KEY = env_int("X402_REVERTED_PER_KEY", 3)
X402_REVERTED_WINDOW_SECONDS = env_int("X402_REVERTED_WINDOW_SECONDS", 3600)
# An authorization must stay valid at least this long after verify (the reference SDK's margin): time for
# the transaction to be signed and mined.
X402_VALID_BEFORE_MARGIN_SECONDS = env_int("X402_VALID_BEFORE_MARGIN_SECONDS", 6)
# GET /x402/pay/{short_code}: how long a link's x402 offer (its quote and address) may be paid, and how many
# offers a client address may ask for a minute (each asks the quoter for every token offered).
X402_OFFER_SECONDS = env_int("X402_OFFER_SECONDS", 300)
X402_PAY_RATE_LIMIT_PER_MINUTE = env_int("X402_PAY_RATE_LIMIT_PER_MINUTE", 60)
# The wallet factories (addresses, comma-separated) the facilitator may call, on the service's gas, to deploy a
# payer's smart wallet that signed before it existed (ERC-6492). Empty: such signatures are refused
# (`eip6492_factory_not_allowed`); a wallet already deployed is paid from whatever its signature says.
X402_ERC6492_FACTORIES = [address.lower() for address in env_list("X402_ERC6492_FACTORIES")]
if any(not re.fullmatch(r"0x[0-9a-f]{40}", address) for address in X402_ERC6492_FACTORIES):
    raise ImproperlyConfigured(
        "X402_ERC6492_FACTORIES must be EVM addresses (0x and 40 hex digits), comma-separated."
    )
