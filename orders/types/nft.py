"""An NFT minted to the recipient at its price (`mint_nft`): an ERC-721 or an ERC-1155 of the token id asked
for; its order's metadata describes the NFT as shown to the payer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eth_utils import to_checksum_address
from rest_framework import serializers

from chains.artifacts import encode_call
from orders.models import Order
from orders.serializers.common import AddressField, StrictIntegerField, TokenAmountField
from orders.serializers.requests import QuoteCommonSerializer
from orders.types.base import EXACT_OUTPUT, Call, Family, OrderType

CONTRACT_TYPES = ["erc721", "erc1155"]


class MintNftPayload(serializers.Serializer):
    contractAddress = AddressField()
    tokenId = StrictIntegerField(min_value=0, allow_null=True)
    contractType = serializers.ChoiceField(choices=CONTRACT_TYPES)
    nftPrice = TokenAmountField(allow_zero=True)


class MintNftQuote(QuoteCommonSerializer):
    contractAddress = AddressField()
    tokenId = StrictIntegerField(min_value=0, allow_null=True, required=False)
    contractType = serializers.ChoiceField(choices=CONTRACT_TYPES)
    price = TokenAmountField()


def _mint(order: Order, dst_amount: int) -> Call:
    payload, recipient = order.payload, to_checksum_address(order.recipient_address)
    if payload["contractType"] == "erc1155":
        data = encode_call("PricedNFT1155", "mint", recipient, payload.get("tokenId") or 0, 1)
    else:
        data = encode_call("PricedNFT721", "mint", recipient)
    return payload["contractAddress"], data, 0


def _price(data: Mapping[str, Any]) -> tuple[str, int]:
    return EXACT_OUTPUT, int(data["price"])


MINT_NFT = OrderType(
    name=Order.Type.MINT_NFT,
    family=Family.CALL,
    meaning="an ERC-721 minted to the recipient, at its price",
    payload=MintNftPayload,
    quote=MintNftQuote,
    fixes=_price,
    amount_field="price",
    needs_nft=True,
    price=lambda order: int(order.payload["nftPrice"]),
    spender=lambda order: order.payload["contractAddress"],
    call=_mint,
)
TYPES = (MINT_NFT,)
