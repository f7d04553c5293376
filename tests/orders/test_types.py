"""Every order type is declared once (orders.types), and every table keyed by type has each of them."""

from orders.inputs import AMOUNT_FIELDS
from orders.models import Order
from orders.serializers.orders import PAYLOADS, QUOTES
from orders.types import CALLS_CONTRACT, EXPECTED_DST_TYPES, SWAP_TYPES, TYPES

ALL = set(Order.Type.values)


def test_every_order_type_has_a_declaration_and_belongs_to_one_family():
    assert set(TYPES) == ALL
    assert SWAP_TYPES | CALLS_CONTRACT == ALL and not SWAP_TYPES & CALLS_CONTRACT
    assert SWAP_TYPES <= EXPECTED_DST_TYPES and {"custom_exact_in"} == EXPECTED_DST_TYPES - SWAP_TYPES


def test_every_table_keyed_by_order_type_has_every_type():
    assert set(PAYLOADS) == set(QUOTES) == ALL
    # A fixed amount is named by its wire field for the calls whose payer does not send what arrives.
    assert set(AMOUNT_FIELDS) == CALLS_CONTRACT - EXPECTED_DST_TYPES
