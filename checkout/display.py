"""What the hosted page and the widgets' page show: amounts in a token's units (and the payer's text read
back), the tokens a payer may pay with, a deposit address's QR code, and whether an accent colour takes
dark or light text."""

from __future__ import annotations

import re
import time
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import zxingcpp
from django.core.signals import setting_changed
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils.translation import gettext as _

from chains.evm import ZERO_ADDRESS
from chains.models import Token
from chains.registry import chains
from chains.testchains import acting_in_test_mode, test_chain_refusal
from chains.tokens import token_get


def format_units(amount: int, decimals: int) -> str:
    value = Decimal(amount).scaleb(-decimals)
    text = format(value.normalize(), "f")
    return text if "." not in text else text.rstrip("0").rstrip(".")


def parse_units(text: str, decimals: int) -> int | None:
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, ValueError):
        return None
    if not value.is_finite() or value <= 0 or value.as_tuple().exponent < -decimals or len(text) > 40:  # type: ignore[operator]
        return None
    return int(value.scaleb(decimals))


TOKEN_PICKER_TTL_SECONDS = 60  # a reloaded token list shows on the page within a minute
_picker: dict[tuple[int, ...], tuple[float, list[dict[str, Any]]]] = {}


def payable_tokens(*, test_mode: bool | None = None) -> list[dict[str, Any]]:
    """Tokens of the registry on chains that take payments (a deposit factory), for the token picker; the
    test chains' only in `test_mode` (default: while the request acts for a test-mode organization, as the
    dashboard in test mode does: chains.testchains).

    Every page view shows the list, and the registry changes only when a token
    list is loaded: each process keeps it for a minute.
    """
    options = _payable_tokens()
    if test_mode is None:
        test_mode = acting_in_test_mode()
    return [o for o in options if test_chain_refusal(o["chain_id"]) is None] if test_mode else options


def _payable_tokens() -> list[dict[str, Any]]:
    takes = {chain.chain_id: chain for chain in chains() if chain.accepts_payments}
    key = tuple(sorted(takes))
    cached = _picker.get(key)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    tokens = Token.objects.filter(chain_id__in=list(takes)).order_by("chain_id", "symbol")
    options = [
        {
            "value": f"{t.chain_id}:{t.address}",
            "label": f"{t.symbol} on {takes[t.chain_id].name}",
            "symbol": t.symbol,
            "chain": takes[t.chain_id].name,
            "chain_id": t.chain_id,
            "address": t.address,
        }
        for t in tokens
    ]
    _picker.clear()
    if options:  # an empty registry (before `load_tokens`) is not kept
        _picker[key] = (time.monotonic() + TOKEN_PICKER_TTL_SECONDS, options)
    return options


QR_QUIET_ZONE = 4  # light modules around the code, as the QR standard asks
QR_MODULE_PX = 4
_DARK_RUN = re.compile(rb"\x00+")


def qr_rows(text: str) -> list[bytes]:
    """`text` as a QR code's modules, row by row (0 dark, 255 light), without its quiet zone: error correction
    level M, the version and the mask chosen by zxing-cpp's encoder (the standard's penalty rules, in C++)."""
    symbol = zxingcpp.create_barcode(text, zxingcpp.BarcodeFormat.QRCode, ec_level="M")
    image = symbol.to_image(scale=1, add_quiet_zones=False)
    height, width = image.shape
    modules = bytes(image)  # type: ignore[call-overload]  # an Image is a buffer; its stubs do not say so
    return [modules[y * width : (y + 1) * width] for y in range(height)]


@lru_cache(maxsize=4096)
def qr_svg(text: str) -> str:
    """`text` (a payment URI, a link) as an inline SVG QR code: one path of each row's dark runs, on a light
    square with the quiet zone (the same text always draws the same code)."""
    rows = qr_rows(text)
    side = len(rows) + 2 * QR_QUIET_ZONE
    dark = "".join(
        f"M{run.start() + QR_QUIET_ZONE} {y + QR_QUIET_ZONE}h{run.end() - run.start()}v1h-{run.end() - run.start()}z"
        for y, row in enumerate(rows)
        for run in _DARK_RUN.finditer(row)
    )
    px = side * QR_MODULE_PX
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{px}" height="{px}" viewBox="0 0 {side} {side}" '
        f'shape-rendering="crispEdges"><path fill="#ffffff" d="M0 0h{side}v{side}h-{side}z"/>'
        f'<path fill="#111111" d="{dark}"/></svg>'
    )


def qr_terminal(text: str) -> str:
    """`text` as a QR code for a terminal: two rows of modules per line in half blocks, light on dark
    terminals' default (the light modules and the quiet zone are drawn)."""
    rows = qr_rows(text)
    light = [b"\xff" * (len(rows) + 2 * QR_QUIET_ZONE)] * QR_QUIET_ZONE
    rows = light + [b"\xff" * QR_QUIET_ZONE + row + b"\xff" * QR_QUIET_ZONE for row in rows] + light
    rows.append(b"\x00" * len(rows[0]))  # an odd count: the last line's lower half is left dark
    blocks = {(True, True): "\u2588", (True, False): "\u2580", (False, True): "\u2584", (False, False): " "}
    return "".join(
        "".join(blocks[(top == 255, bottom == 255)] for top, bottom in zip(upper, lower, strict=True)) + "\n"
        for upper, lower in zip(rows[0::2], rows[1::2], strict=False)
    )


def transfer_uri(*, chain_id: int, token_address: str, to: str, amount: int) -> str:
    """An EIP-681 payment request that wallets read from a QR code: `amount` (smallest units) of the token,
    on its chain, to `to`; a native coin as the transaction's value."""
    if token_address.lower() == ZERO_ADDRESS:
        return f"ethereum:{to}@{chain_id}?value={amount}"
    return f"ethereum:{token_address}@{chain_id}/transfer?address={to}&uint256={amount}"


def payment_uri(order, amount: int) -> str:
    """The payment request of `amount` of the order's token to its deposit address (`transfer_uri`)."""
    return transfer_uri(
        chain_id=order.src_chain,
        token_address=order.src_token_address,
        to=order.global_address,
        amount=amount,
    )


_tokens: dict[tuple[int, str], tuple[float, Token | None]] = {}


def display_token(chain_id: int, address: str) -> Token | None:
    """A registry token for display (symbol, decimals); each process keeps it for a minute, as the picker."""
    key = (chain_id, address.lower())
    cached = _tokens.get(key)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    if len(_tokens) > 4096:
        _tokens.clear()
    token = token_get(chain_id=chain_id, address=address)
    if token is not None:
        _tokens[key] = (time.monotonic() + TOKEN_PICKER_TTL_SECONDS, token)
    return token


@receiver(setting_changed)
def _forget_tokens(*, setting: str, **kwargs) -> None:
    if setting == "CHAINS":
        display_tokens_forget()


@receiver(post_save, sender=Token, dispatch_uid="checkout.display.token_saved")
@receiver(post_delete, sender=Token, dispatch_uid="checkout.display.token_deleted")
def display_tokens_forget(**_signal) -> None:
    """Drop the picker's and the display's tokens (a token saved or deleted in this process, a token list
    loaded): the next page reads them again."""
    _picker.clear()
    _tokens.clear()


def luminance(color: str) -> float:
    """WCAG relative luminance of `#rrggbb`: the button's text is dark on a light accent, so it stays readable."""
    channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = ((c / 12.92) if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def wallet_messages() -> dict[str, str]:
    """The wallet script's sentences (checkout/static/checkout/wallet.js: the hosted page, the dashboard's refund
    funding), in the payer's language; `{name}` marks are filled by the script."""
    return {
        "browserWallet": _("Browser wallet"),
        "payWith": _("Pay with {wallet}"),
        "connecting": _("Connecting to {wallet}…"),
        "switching": _("Switching your wallet to {chainName}…"),
        "adding": _("Adding {chainName} to your wallet…"),
        "unknownChain": _(
            "Your wallet does not know {chainName} (chain {chainId}). Add it in the wallet, then try again."
        ),
        "wrongChain": _("Your wallet is still on another network. Switch it to {chainName} and try again."),
        "confirm": _("Confirm the payment in {wallet}."),
        "sent": _("Payment sent. Waiting for the network to confirm it…"),
        "nothingOwed": _("Nothing is owed on this checkout any more."),
        "balance": _("Your wallet holds {have} {symbol}; this payment needs {need} {symbol}."),
        "gas": _("Your wallet does not have enough {nativeSymbol} to pay the network fee."),
        "rejected": _("You declined the request in your wallet. Nothing was sent."),
        "unauthorized": _("The wallet did not connect this page. Try again and approve the connection."),
        "pending": _("Your wallet already has a request open: finish it in the wallet."),
        "gone": _("Your wallet disconnected. Reconnect it, or pay to the address with the QR code."),
        "failed": _("The wallet could not send the payment: {reason}"),
        "signWith": _("Pay with {wallet}, no gas needed"),
        "signConfirm": _("Sign the payment in {wallet}. You pay no network fee."),
        "signSent": _("Payment signed and submitted. Waiting for the network to confirm it…"),
        "signFailed": _("The signed payment was not taken: {reason}"),
    }


def wallet_add_chain(chain) -> dict[str, Any] | None:
    """The EIP-3085 `wallet_addEthereumChain` parameters the wallet script may offer for a devnet (its own RPC
    URL); None for another chain, whose RPC URLs may hold provider keys and are never shown."""
    if not (chain.devnet and chain.rpc_url):
        return None
    return {
        "chainId": hex(chain.chain_id),
        "chainName": chain.name,
        "rpcUrls": [chain.rpc_url],
        "nativeCurrency": {
            "name": chain.native_symbol,
            "symbol": chain.native_symbol,
            "decimals": chain.native_decimals,
        },
        **({"blockExplorerUrls": [chain.explorer_url]} if chain.explorer_url else {}),
    }
