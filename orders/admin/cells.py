"""What the orders' admin pages show in their cells: amounts in units, chains, transactions linked to their
explorer, JSON; the read-only inline every list of an order's records is."""

from decimal import Decimal

from django.contrib import admin
from django.utils.html import format_html

from chains.registry import chain_get
from chains.tokens import token_get
from core.admin import pretty_json, short_hex
from orders.models import (
    Order,
)


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def in_units(chain_id: int, token_address: str, amount) -> str:
    """`amount` (smallest units) as the token's whole units and symbol, e.g. "10.5 dUSDC"."""
    token = token_get(chain_id=chain_id, address=token_address)
    if token is None or amount is None:
        return "-"
    return f"{Decimal(int(amount)).scaleb(-token.decimals).normalize():f} {token.symbol}"


def amount_cell(chain_id: int, token_address: str, amount):
    """`10 dUSDC` with the base units beside it, as staff compare them with the chain: `(10000000)`."""
    if amount is None:
        return "-"
    return format_html(
        '<span class="nowrap">{}</span> ({})', in_units(chain_id, token_address, amount), amount
    )


def chain_label(chain_id: int | None) -> str:
    """`Devnet A (31337)`: a chain as staff name it, with the id the chain reports."""
    if chain_id is None:
        return "-"
    chain = chain_get(chain_id)
    return f"{chain.name} ({chain_id})" if chain else str(chain_id)


def tx_link(chain_id: int, tx_hash: str):
    """A transaction's hash, shortened; a link to the chain's explorer where it has one (devnets do not)."""
    chain = chain_get(chain_id)
    href = f"{chain.explorer_url}/tx/{tx_hash}" if chain and chain.explorer_url and not chain.devnet else None
    return short_hex(tx_hash, href=href)


def json_cell(field: str, description: str | None = None):
    """A read-only admin field showing a JSON column of the order, indented."""

    @admin.display(description=description or field)
    def cell(self, order: Order):
        return pretty_json(getattr(order, field))

    return cell
