"""The order interface: order lifetimes and limits, the deployment's fee choices, the quote and relay
providers, settlement and refunds."""

from __future__ import annotations

import os
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ImproperlyConfigured

from config.settings.chains import DEVNET, VAULT_ADDRESS
from config.settings.django import DEVELOPMENT
from config.settings.env import BASE_DIR, env_bool, env_int, env_list, parse_tiers

ORDER_LIFETIME_SECONDS = 15 * 60
# Above any payment: an amount worth more than this at its token's reference price is refused where it is sent
# (orders, quotes, links, products, sessions, widgets, quick pay), so that every figure derived from an amount
# (fees, points, USD totals) stays within its column.
MAX_PAYMENT_USD = env_int("MAX_PAYMENT_USD", 10**12)
ORDER_LIST_MAX_LIMIT = 100
TOKEN_LIST_FILE = BASE_DIR / "chains" / "data" / "tokens.json"

# The fee schedule (feeVersion 1; orders/fees.py applies it): the base fee by the order's USD value, as
# "upper bound USD:bps" tiers in ascending order and the bps above the last bound; the share of that fee waived
# for holders of the discount token ("tokens held:bps of the fee"); card payments through vendorB: the
# vendor's bps and fixed USD, plus the service's own fixed USD. The dashboard's Settings page and the README
# show the schedule in force; a schedule that does not parse stops the service at start.
FEE_TIERS_USD = parse_tiers("FEE_TIERS_USD", "10:120,500:80,5000:60,50000:40", high=10_000)
FEE_TOP_TIER_BPS = env_int("FEE_TOP_TIER_BPS", 28)
WHALE_DISCOUNT_TIERS = parse_tiers(
    "WHALE_DISCOUNT_TIERS", "100000:5000,500000:7500,1000000:10000", high=10_000
)
CARD_VENDOR_FEE_BPS = env_int("CARD_VENDOR_FEE_BPS", 540)
CARD_VENDOR_FEE_USD = os.environ.get("CARD_VENDOR_FEE_USD", "0.30")
if not 0 <= FEE_TOP_TIER_BPS <= 10_000 or not 0 <= CARD_VENDOR_FEE_BPS < 10_000:
    raise ImproperlyConfigured("FEE_TOP_TIER_BPS and CARD_VENDOR_FEE_BPS are basis points (0 to 10000)")
# The deployment's discount token (B3 on Base) and the card service fee.
DISCOUNT_TOKEN_CHAIN_ID = env_int("DISCOUNT_TOKEN_CHAIN_ID", 8453)
DISCOUNT_TOKEN_ADDRESS = os.environ.get(
    "DISCOUNT_TOKEN_ADDRESS", "0xB3B32F9f8827D4634fE7d973Fa1034Ec9fdDB3B3"
)
# The service's fixed fee on card payments through vendorB, in USD (beside the vendor's, above).
CARD_SERVICE_FEE_USD = os.environ.get("CARD_SERVICE_FEE_USD", "0.00")
for _name, _usd in (
    ("CARD_VENDOR_FEE_USD", CARD_VENDOR_FEE_USD),
    ("CARD_SERVICE_FEE_USD", CARD_SERVICE_FEE_USD),
):
    try:
        if Decimal(_usd) < 0:
            raise InvalidOperation
    except InvalidOperation:
        raise ImproperlyConfigured(f"{_name} is a USD amount such as 0.30, not {_usd!r}") from None

# External providers. "offline" prices from the token registry and reads balances as 0;
# "relay" / "rpc" call the real services.
QUOTE_PROVIDER = os.environ.get("QUOTE_PROVIDER", "offline")
RELAY_API_URL = os.environ.get("RELAY_API_URL", "https://api.relay.link")
RELAY_API_KEY = os.environ.get("RELAY_API_KEY", "")
# Ask the relay provider to fill a provider-routed order as soon as the vault's deposit is broadcast
# (`POST /fast-fill`, an enterprise feature of the provider's), within the origin chain and token's exposure
# limits (orders/fast_fills.py). Off by default: the provider refuses it without the app balance it needs.
RELAY_FAST_FILL = env_bool("RELAY_FAST_FILL", False)
# How long a fill the relay provider gave up on (TRANSACTION_NOT_INCLUDED) is watched for on the destination
# chain before its order goes to the operator's queue (orders/relay_outcomes.py).
RELAY_NOT_INCLUDED_GRACE_SECONDS = env_int("RELAY_NOT_INCLUDED_GRACE_SECONDS", 600)
# The address that sends the relay transaction: the service's vault.
RELAY_QUOTE_USER = os.environ.get("RELAY_QUOTE_USER", VAULT_ADDRESS or "0x" + "0" * 40)
# Who delivers on the destination chain (orders/relays.py): "devnet" (the solver, between devnets only)
# or "relay" (the relay provider's HTTP API at RELAY_API_URL).
RELAY_PROVIDER = os.environ.get("RELAY_PROVIDER", "devnet" if DEVELOPMENT else "relay")
# Settlement re-prices what arrived; below the payer's expectedDstAmount less this tolerance it is refunded.
SETTLEMENT_SLIPPAGE_BPS = env_int("SETTLEMENT_SLIPPAGE_BPS", 100)
# How long a relay may take before the order is failed and refunded.
RELAY_TIMEOUT_SECONDS = env_int("RELAY_TIMEOUT_SECONDS", 600)
# How often orders waiting for the relay provider's fill ask it for their status.
RELAY_POLL_SECONDS = float(os.environ.get("RELAY_POLL_SECONDS", "2" if DEVNET else "5"))
# The relay provider's depository on each chain ("8453:0x…,42161:0x…", from the provider's published contract
# addresses): the only spender the vault gives its standing allowance to (orders/relays.py). A quote that asks
# the vault to approve anything else fails its order before any money moves.
RELAY_DEPOSITORIES: dict[int, str] = {}
for _entry in env_list("RELAY_DEPOSITORIES"):
    _chain, _, _address = _entry.partition(":")
    if not (_chain.strip().isdigit() and len(_address.strip()) == 42 and _address.strip().startswith("0x")):
        raise ImproperlyConfigured(f"RELAY_DEPOSITORIES: {_entry!r} is not <chain id>:<0x address>")
    RELAY_DEPOSITORIES[int(_chain)] = _address.strip().lower()
# The gas the relay provider may spend on a contract order's calls on the destination (the quote's
# `txsGasLimit`): the approval and the mint, entry, fund or custom call.
RELAY_TXS_GAS_LIMIT = env_int("RELAY_TXS_GAS_LIMIT", 500_000)
QUOTE_SLIPPAGE_BPS = env_int("QUOTE_SLIPPAGE_BPS", 50)
# Settlement (orders/settlement.py): a step that has made no progress for this long is listed as stuck.
SETTLEMENT_STUCK_SECONDS = env_int("SETTLEMENT_STUCK_SECONDS", 300)
# A refund that failed moved nothing: it is tried again after this long, this many times in all.
REFUND_RETRY_SECONDS = env_int("REFUND_RETRY_SECONDS", 60)
REFUND_MAX_ATTEMPTS = env_int("REFUND_MAX_ATTEMPTS", 5)
