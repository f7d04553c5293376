"""`manage.py relay allow CHAIN_ID TOKEN [TOKEN ...]`: the vault's standing allowance for the relay provider's
pinned depository (RELAY_DEPOSITORIES), given when a chain is added rather than by the first order that needs it.

Without it the first order through the provider from a chain, in each token, waits for the vault's `approve`
to be mined and confirmed before its deposit goes out (orders.relays.vault_allowance); the allowance is the same
one, under the same business key, so an order that comes later finds it and asks for nothing."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from eth_utils import is_address, to_checksum_address

from chains.evm import ZERO_ADDRESS
from chains.registry import chain_get
from chains.tokens import token_get
from orders.relays import vault_allowance


class Command(BaseCommand):
    help = "Give the relay provider's pinned depository the vault's standing allowance of tokens on a chain."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        allow = sub.add_parser(
            "allow",
            help="Ask for the vault's standing allowance of each TOKEN for the depository on CHAIN_ID.",
        )
        allow.add_argument("chain_id", type=int)
        allow.add_argument("tokens", nargs="+", metavar="TOKEN", help="a registered ERC-20 token's address")

    def handle(self, *args, action: str, chain_id: int, tokens: list[str], **options):
        if chain_get(chain_id) is None:
            raise CommandError(f"chain_id: chain {chain_id} is not in the registry (manage.py chains list)")
        depository = settings.RELAY_DEPOSITORIES.get(chain_id)
        if not depository:
            raise CommandError(
                f"chain_id: RELAY_DEPOSITORIES pins no depository on chain {chain_id}: add <chain id>:<address> "
                "from the relay provider's documentation"
            )
        for token in tokens:  # every token checked before anything is asked for
            if not is_address(token) or token.lower() == ZERO_ADDRESS:
                raise CommandError(
                    f"token: {token!r} is not an ERC-20 token's address (the native coin needs none)"
                )
            if token_get(chain_id=chain_id, address=token) is None:
                raise CommandError(f"token: {token} is not a registered token on chain {chain_id}")
        with transaction.atomic():
            asked = [vault_allowance(chain_id=chain_id, token=token, spender=depository) for token in tokens]
        for token, tx in zip(tokens, asked, strict=True):
            self.stdout.write(
                f"The vault's allowance of {to_checksum_address(token)} for the depository "
                f"{to_checksum_address(depository)} on chain {chain_id}: {tx.key}, {tx.status}"
                + (" (the signing worker sends it)" if tx.in_flight else "")
            )
