"""What an operator does for the relay provider and the solver's inventory when a chain is added.

- `manage.py relay allow CHAIN_ID TOKEN [TOKEN ...]`: the vault's standing allowance for the relay provider's
  pinned depository (RELAY_DEPOSITORIES), given now rather than by the first order that needs it. Without it
  the first order through the provider from a chain, in each token, waits for the vault's `approve` to be
  confirmed before its deposit goes out (orders.relays.vault_allowance); it is the same allowance, under the
  same business key, so an order that comes later finds it and asks for nothing.
- `manage.py relay deploy-router CHAIN_ID`: the call router (orders/router.py) through the deterministic
  deployment proxy, signed by the deployer in the signing worker; once it is there, contract orders whose
  token the solver's inventory holds have their call made from the inventory.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from eth_utils import is_address, to_checksum_address

from chains.client import web3_for
from chains.evm import ZERO_ADDRESS, deployer_proxy_missing
from chains.models import OutboxTx
from chains.outbox import outbox_wait, still_in_flight
from chains.registry import chain_get
from chains.tokens import token_get
from orders.models import Inventory
from orders.relays import vault_allowance
from orders.router import router_address, router_deploy_submit, router_state, solver_allowance


class Command(BaseCommand):
    help = (
        "For a chain just added: the vault's standing allowance for the relay provider's depository (allow), "
        "the call router for contract orders made from the solver's inventory (deploy-router)."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        allow = sub.add_parser(
            "allow",
            help="Ask for the vault's standing allowance of each TOKEN for the depository on CHAIN_ID.",
        )
        allow.add_argument("chain_id", type=int)
        allow.add_argument("tokens", nargs="+", metavar="TOKEN", help="a registered ERC-20 token's address")
        deploy = sub.add_parser(
            "deploy-router", help="Deploy the call router on CHAIN_ID (CREATE2, signed by the deployer)."
        )
        deploy.add_argument("chain_id", type=int)
        deploy.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the worker")

    def handle(self, *args, action: str, chain_id: int, **options):
        if chain_get(chain_id) is None:
            raise CommandError(f"chain_id: chain {chain_id} is not in the registry (manage.py chains list)")
        if action == "deploy-router":
            self._deploy_router(chain_id, options["timeout"])
            return
        tokens: list[str] = options["tokens"]
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

    def _deploy_router(self, chain_id: int, timeout: float) -> None:
        address = router_address()
        state = router_state(chain_id)
        if state == "unknown":
            raise CommandError(f"chain_id: no RPC node of chain {chain_id} answers")
        if state == "different":
            raise CommandError(f"{address} holds other code than the CallRouter artifact's")
        if state == "ours":
            self.stdout.write(f"Chain {chain_id}: the call router is at {address} (already deployed)")
        else:
            self._deploy(chain_id, address, timeout)
        # The solver's standing allowance for the router, per token it keeps on this chain: asked for now, so
        # the first contract order is called from the inventory rather than asking for it (orders/router.py).
        tokens = Inventory.objects.filter(chain_id=chain_id, enabled=True).exclude(token=ZERO_ADDRESS)
        with transaction.atomic():
            asked = [solver_allowance(chain_id, token) for token in tokens.values_list("token", flat=True)]
        for tx in asked:
            if tx is not None:
                self.stdout.write(
                    f"The solver's allowance of {tx.to} for the router on chain {chain_id}: {tx.key}, {tx.status}"
                    + (" (the signing worker sends it)" if tx.in_flight else "")
                )

    def _deploy(self, chain_id: int, address: str, timeout: float) -> None:
        chain = chain_get(chain_id)
        assert chain is not None
        if missing := deployer_proxy_missing(web3_for(chain), f"chain {chain_id}"):
            raise CommandError(missing)
        tx = router_deploy_submit(chain_id)
        self.stdout.write(
            f"Chain {chain_id}: deploying the call router at {address} (outbox {tx.key}), signed by the deployer "
            "in the signing worker…"
        )
        tx = outbox_wait(tx, timeout=timeout)
        if tx.in_flight:
            raise CommandError(still_in_flight(tx, timeout))
        if tx.status != OutboxTx.Status.MINED or router_state(chain_id) != "ours":
            raise CommandError(f"the deployment failed: {tx.error or 'no router code at ' + address}")
        self.stdout.write(f"Chain {chain_id}: the call router is at {address} (transaction {tx.tx_hash})")
