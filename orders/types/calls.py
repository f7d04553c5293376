"""Any contract call on the destination chain: `custom` makes the payer's calldata for a fixed amount;
`custom_exact_in` spends what arrives (less the fee) on `functionName` of `functionAbi`, with `functionArgs`
that may name `{{recipient}}` and `{{amount}}`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from eth_utils import to_checksum_address
from rest_framework import serializers
from web3 import Web3

from chains.evm import ZERO_ADDRESS, is_address
from orders.models import Order
from orders.serializers.common import AddressField, HexDataField, StrictCharField, TokenAmountField
from orders.serializers.requests import AmountQuote, QuoteCommonSerializer
from orders.types.base import EXACT_INPUT, EXACT_OUTPUT, Call, ExecutionInvalid, Family, OrderType

_OFFLINE = Web3()  # encodes calldata; never connects


class CustomPayload(serializers.Serializer):
    data = HexDataField()
    to = AddressField()
    spenderAddress = AddressField(required=False)
    amount = TokenAmountField(allow_zero=True)


class CustomExactInPayload(serializers.Serializer):
    amount = TokenAmountField(allow_zero=True)
    expectedDstAmount = TokenAmountField(allow_zero=True)
    functionAbi = StrictCharField(max_length=100_000)
    functionName = StrictCharField(max_length=200)
    functionArgs = serializers.ListField(
        child=StrictCharField(allow_blank=True, max_length=10_000), max_length=64
    )
    to = AddressField()
    spenderAddress = AddressField(required=False)
    value = TokenAmountField(required=False, allow_zero=True)
    action = StrictCharField(required=False, max_length=255)

    def validate_functionAbi(self, value: str) -> str:
        try:
            parsed = json.loads(value)
        except ValueError:
            raise serializers.ValidationError("Must be a JSON-stringified ABI.") from None
        if not isinstance(parsed, list | dict):
            raise serializers.ValidationError("Must be a JSON-stringified ABI (an array or an object).")
        return value


class CustomQuotePayload(CustomPayload):
    """The order's custom payload, except that a quote needs an amount to price (no zero)."""

    amount = TokenAmountField()


class CustomQuote(QuoteCommonSerializer):
    payload = CustomQuotePayload()


def _spender(order: Order) -> str | None:
    return order.payload.get("spenderAddress") or None


def _template(value: str, variables: dict[str, str]) -> str:
    for name, replacement in variables.items():
        value = value.replace("{{" + name + "}}", replacement)
    return value


def _argument(kind: str, value: str) -> Any:
    if kind.startswith(("uint", "int")):
        return int(value, 0)
    if kind == "address":
        if not is_address(value):
            raise ValueError(f"{value!r} is not an address")
        return to_checksum_address(value)
    if kind == "bool":
        return value.lower() in ("true", "1")
    if kind.startswith("bytes"):
        return bytes.fromhex(value.removeprefix("0x"))
    return value


def custom_exact_in_call(order: Order, dst_amount: int) -> str:
    """Calldata of a `custom_exact_in` order: `functionName` of `functionAbi` with `functionArgs`.

    Arguments may use `{{recipient}}` (the order's recipient) and `{{amount}}`
    (what was delivered on the destination chain, after fees).
    """
    payload = order.payload
    try:
        abi = json.loads(payload["functionAbi"])
        abi = abi if isinstance(abi, list) else [abi]
        function = next(
            f
            for f in abi
            if f.get("type", "function") == "function" and f.get("name") == payload["functionName"]
        )
        variables = {
            "recipient": order.recipient_address,
            "recipientAddress": order.recipient_address,
            "amount": str(dst_amount),
            "dstAmount": str(dst_amount),
        }
        arguments = [_template(a, variables) for a in payload["functionArgs"]]
        if len(arguments) != len(function.get("inputs", [])):
            raise ValueError(f"{payload['functionName']} takes {len(function.get('inputs', []))} arguments")
        values = [_argument(i["type"], a) for i, a in zip(function["inputs"], arguments, strict=True)]
        contract = _OFFLINE.eth.contract(address=to_checksum_address(payload["to"]), abi=[function])
        return contract.encode_abi(payload["functionName"], args=values)
    except (StopIteration, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ExecutionInvalid(f"the order's function call cannot be encoded: {exc}") from None


def _custom_call(order: Order, dst_amount: int) -> Call:
    native = order.dst_token_address == ZERO_ADDRESS
    return order.payload["to"], order.payload["data"], dst_amount if native else 0


def _exact_in_call(order: Order, dst_amount: int) -> Call:
    native = order.dst_token_address == ZERO_ADDRESS
    value = int(order.payload.get("value") or 0) or (dst_amount if native else 0)
    return order.payload["to"], custom_exact_in_call(order, dst_amount), value


def _payload_amount(data: Mapping[str, Any]) -> tuple[str, int]:
    return EXACT_OUTPUT, int(data["payload"]["amount"])


def _spends_amount(data: Mapping[str, Any]) -> tuple[str, int]:
    return EXACT_INPUT, int(data["amount"])


CUSTOM = OrderType(
    name=Order.Type.CUSTOM,
    family=Family.CALL,
    meaning="any contract call, for a fixed amount",
    payload=CustomPayload,
    quote=CustomQuote,
    fixes=_payload_amount,
    amount_field="payload.amount",
    price=lambda order: int(order.payload.get("amount") or 0),
    spender=_spender,
    call=_custom_call,
)
CUSTOM_EXACT_IN = OrderType(
    name=Order.Type.CUSTOM_EXACT_IN,
    family=Family.CALL,
    meaning="any call spending what arrives",
    payload=CustomExactInPayload,
    quote=AmountQuote,
    fixes=_spends_amount,
    exact_in=True,
    spender=_spender,
    call=_exact_in_call,
)
TYPES = (CUSTOM, CUSTOM_EXACT_IN)
