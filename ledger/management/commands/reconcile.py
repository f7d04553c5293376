"""`manage.py reconcile [--chain ID] [--at-block N] [--adopt REASON]`: the ledger against the chains.

Prints, per chain, every address the service holds value at and every token the ledger knows there: what the
ledger expects at the block, what is in flight (mined or recorded, not yet posted), what the chain holds, and
the difference, with the latest postings of an address that differs. Exits 1 when anything differs or a
chain could not be compared, so it can gate a deploy or page someone.

`--adopt REASON` records the differences of this run as adjustments from the operator's funds (opening
balances, a top-up): only for a difference whose cause a person knows.

`--open-devnets` (what `make run` does after deploying its devnets, which start from block 0 each time):
for each devnet, count only what is posted from now on (`ReconcileStart`: the postings of its previous life
are another world's), confirm the deployment's block, scan it, and adopt what the vault and the solver hold
as opening balances. Never for a real chain.
"""

from __future__ import annotations

import getpass
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser
from web3.types import RPCEndpoint

from chains.client import web3_for
from chains.models import Token
from chains.registry import chain_get, chains
from chains.watcher import scan_chain
from ledger.models import ReconcileRun
from ledger.reconcile import adopt, reconcile_chain, restart_devnet


def token_symbols() -> dict[tuple[int, str], str]:
    return {
        (chain, address.lower()): symbol
        for chain, address, symbol in Token.objects.values_list("chain_id", "address", "symbol")
    }


def _short(address: str) -> str:
    return f"{address[:8]}…{address[-6:]}" if len(address) == 42 else address


def render(run: ReconcileRun, symbols: dict[tuple[int, str], str]) -> list[str]:
    """The run as lines of a table (also what the admin shows)."""
    chain = chain_get(run.chain_id)
    name = chain.name if chain is not None else f"chain {run.chain_id}"
    if run.error:
        return [f"{name} ({run.chain_id}): could not reconcile: {run.error}"]
    lines = [
        f"{name} ({run.chain_id}) at block {run.block_number} {run.block_hash}: "
        + ("no difference" if run.ok else f"{run.differences} difference(s)"),
        f"  {'account':<16} {'address':<16} {'token':<8} {'expected':>28} {'in flight':>14} {'actual':>28} "
        f"{'difference':>16}",
    ]
    for row in run.rows:
        symbol = symbols.get(
            (run.chain_id, row["token"].lower()), "ETH" if int(row["token"], 16) == 0 else "?"
        )
        lines.append(
            f"  {row['kind']:<16} {_short(row['address']):<16} {symbol:<8} {row['expected']:>28} "
            f"{row['in_flight']:>14} {row['actual']:>28} {row['difference']:>16}"
        )
        for posting in row.get("recent") or []:
            lines.append(
                f"      {posting['at'][:19]} {posting['kind']:<12} {posting['side']:<6} {posting['amount']:>28} "
                f"block {posting['block']}  {posting['key']}"
            )
    return lines


class Command(BaseCommand):
    help = "Compare the ledger's balances of the vault, the solver and unswept deposit addresses with the chains."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--chain", type=int, help="Only this chain id (default: every chain in the registry)."
        )
        parser.add_argument(
            "--at-block", type=int, help="This block (default: the watcher's confirmed block)."
        )
        parser.add_argument(
            "--open-devnets",
            action="store_true",
            help="Start reconciling every devnet afresh at what it holds now (make run).",
        )
        parser.add_argument(
            "--adopt",
            metavar="REASON",
            help="Record this run's differences as adjustments from the operator's funds, for REASON.",
        )

    def handle(self, *args, **options):
        if options["open_devnets"]:
            return self.open_devnets()
        # Every chain the watcher reads (one with an RPC URL): where no node is known, the service holds nothing.
        ids = (
            [options["chain"]]
            if options["chain"] is not None
            else [c.chain_id for c in chains() if c.rpc_urls]
        )
        if options["chain"] is not None and chain_get(options["chain"]) is None:
            raise CommandError(f"chain {options['chain']} is not in the registry")
        if options["at_block"] is not None and (options["chain"] is None or options["at_block"] < 0):
            raise CommandError("--at-block needs --chain and a block number")
        if options["adopt"] is not None and not options["adopt"].strip():
            raise CommandError("--adopt needs a reason")
        symbols = token_symbols()
        failed = False
        for chain_id in ids:
            run = reconcile_chain(chain_id, options["at_block"])
            for line in render(run, symbols):
                self.stdout.write(line)
            if options["adopt"] and run.differences:
                keys = adopt(run, reason=options["adopt"].strip(), by=f"manage.py:{getpass.getuser()}")
                self.stdout.write(f"  adopted {len(keys)} difference(s) as adjustments")
                run = reconcile_chain(chain_id, run.block_number)
            failed = failed or not run.ok
        if failed:
            sys.exit(1)

    def open_devnets(self) -> None:
        for chain in chains():
            if not chain.devnet:
                continue
            if restart_devnet(chain.chain_id, reason="the devnet started again from block 0") is not None:
                self.stdout.write(
                    f"{chain.name}: a new devnet; the ledger's earlier postings of it no longer count"
                )
            web3_for(chain).provider.make_request(RPCEndpoint("evm_mine"), [])  # confirm the deploy's block
            scan_chain(chain.chain_id)
            run = reconcile_chain(chain.chain_id, opening=True)
            if run.error:
                raise CommandError(f"{chain.name}: {run.error}")
            keys = adopt(run, reason="opening balances of a new devnet", by="make run")
            self.stdout.write(
                f"{chain.name}: the ledger opens at block {run.block_number} with what the devnet's vault and "
                f"solver hold ({len(keys)} balances); reconciliation is clean from here"
            )
