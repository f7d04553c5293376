"""Every order type is declared once (orders.types), and every table keyed by type has each of them."""

import pytest

from chains.evm import ZERO_ADDRESS
from orders.inputs import QuoteInput
from orders.models import Order
from orders.serializers.orders import PAYLOADS, QUOTES
from orders.types import (
    AMOUNT_FIELDS,
    CALLS_CONTRACT,
    EXPECTED_DST_TYPES,
    SWAP_TYPES,
    TYPES,
    ExecutionInvalid,
    OrderType,
    of,
)

ALL = set(Order.Type.values)


def test_every_order_type_has_a_declaration_and_belongs_to_one_family():
    assert set(TYPES) == ALL
    assert SWAP_TYPES | CALLS_CONTRACT == ALL and not SWAP_TYPES & CALLS_CONTRACT
    assert SWAP_TYPES <= EXPECTED_DST_TYPES and {"custom_exact_in"} == EXPECTED_DST_TYPES - SWAP_TYPES


def test_every_table_keyed_by_order_type_has_every_type():
    assert set(PAYLOADS) == set(QUOTES) == ALL
    # A fixed amount is named by its wire field for the calls whose payer does not send what arrives.
    assert set(AMOUNT_FIELDS) == CALLS_CONTRACT - EXPECTED_DST_TYPES


def test_every_call_declares_its_price_spender_and_call_and_no_swap_makes_one():
    defaults = OrderType.__dataclass_fields__
    for name, kind in TYPES.items():
        declared = {part for part in ("spender", "call") if getattr(kind, part) is not defaults[part].default}
        assert declared == ({"spender", "call"} if name in CALLS_CONTRACT else set()), name
        if name in CALLS_CONTRACT - EXPECTED_DST_TYPES:  # a fixed price, which what arrives must cover
            assert kind.price is not defaults["price"].default, name


def _order(order_type, payload, dst_token="0x" + "cd" * 20):
    return Order(
        type=order_type, payload=payload, recipient_address="0x" + "ab" * 20, dst_token_address=dst_token
    )


def test_a_calls_price_spender_and_call_are_read_from_its_payload():
    tournament, nft = "0x" + "11" * 20, "0x" + "22" * 20
    join = _order("join_tournament", {"contractAddress": tournament, "entryPrice": "7"})
    fund = _order("fund_tournament", {"contractAddress": tournament, "fundAmount": "9"})
    mint = _order(
        "mint_nft", {"contractAddress": nft, "tokenId": None, "contractType": "erc721", "nftPrice": "5"}
    )
    custom = _order("custom", {"to": nft, "data": "0xabcd", "amount": "3", "spenderAddress": tournament})
    native = _order("custom", {"to": nft, "data": "0x", "amount": "3"}, dst_token=ZERO_ADDRESS)
    assert [of(o).price(o) for o in (join, fund, mint, custom)] == [7, 9, 5, 3]
    assert [of(o).spender(o) for o in (join, fund, mint, custom, native)] == [tournament] * 2 + [nft] + [
        tournament,
        None,
    ]
    assert of(join).call(join, 7)[0] == tournament and of(fund).call(fund, 9)[0] == tournament
    assert of(custom).call(custom, 3) == (nft, "0xabcd", 0)
    assert of(native).call(native, 3) == (nft, "0x", 3)  # a native delivery is the call's value
    swap = _order("swap", {"expectedDstAmount": "1"})
    with pytest.raises(ExecutionInvalid):
        of(swap).call(swap, 1)


@pytest.mark.parametrize(
    ("body", "fixed"),
    [
        ({"type": "swap", "tradeType": "EXACT_INPUT", "amount": "10"}, ("EXACT_INPUT", 10)),
        ({"type": "swap", "tradeType": "EXACT_OUTPUT", "amount": "11"}, ("EXACT_OUTPUT", 11)),
        ({"type": "x402_swap", "amount": "12"}, ("EXACT_OUTPUT", 12)),
        ({"type": "duel", "amount": "13"}, ("EXACT_OUTPUT", 13)),
        ({"type": "custom_exact_in", "amount": "14"}, ("EXACT_INPUT", 14)),
        ({"type": "custom", "payload": {"amount": "15"}}, ("EXACT_OUTPUT", 15)),
        ({"type": "mint_nft", "price": "16"}, ("EXACT_OUTPUT", 16)),
        ({"type": "join_tournament", "price": "17"}, ("EXACT_OUTPUT", 17)),
        ({"type": "fund_tournament", "fundAmount": "18"}, ("EXACT_OUTPUT", 18)),
    ],
)
def test_each_type_fixes_its_own_side_of_a_quote(body, fixed):
    common = {
        "srcChain": 31337,
        "dstChain": 31338,
        "srcTokenAddress": "0x" + "01" * 20,
        "dstTokenAddress": "0x" + "02" * 20,
    }
    ask = QuoteInput.from_wire({**common, **body})
    assert (ask.trade_type, ask.amount) == fixed
    assert ask.amount_field == AMOUNT_FIELDS.get(body["type"], "amount")
