"""`manage.py chains add|list|check|deploy-factory|disable|enable|seed|token`: the chain registry, from a shell.

Every subcommand checks what it is given before it writes: a wrong chain id, an
unreachable URL, a string that is not an address or a factory whose code is not
the compiled artifact's is refused with one line and a non-zero exit, and
nothing changes. `chains check` exits non-zero when a chain that takes payments
is unhealthy (or none takes payments): it can be a readiness probe.
"""

from __future__ import annotations

import argparse
import time
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError, CommandParser
from web3 import Web3

from chains.client import node_label, probe, web3_for
from chains.eip3009 import domain_problem
from chains.evm import deployer_proxy_missing, is_address, to_checksum_address
from chains.factory import (
    FactoryError,
    factory_address,
    factory_code_state,
    factory_deploy_attempt,
    factory_deploy_submit,
    factory_owner,
    factory_record,
)
from chains.handlers import check_sections
from chains.health import chain_health
from chains.keys import Signer
from chains.models import Chain as ChainRow
from chains.models import OutboxTx, Token
from chains.outbox import outbox_wait, still_in_flight
from chains.registry import (
    Chain,
    ChainError,
    chain_from_entry,
    chain_get,
    chains,
    chains_seed,
    registry_forget,
)
from chains.signers import signer_address


def _units(wei: int | None, decimals: int) -> str:
    if wei is None:
        return "?"
    return f"{Decimal(wei) / Decimal(10) ** decimals:.4f}"


def _chain_arg(value: str) -> Chain:
    if not value.isdigit() or not 0 < int(value) < 2**63:
        raise CommandError(f"{value!r} is not a chain id")
    chain = chain_get(int(value))
    if chain is None:
        raise CommandError(f"chain {value} is not in the registry (`manage.py chains list`)")
    return chain


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


class Command(BaseCommand):
    help = "The chain registry: add, list, check, deploy-factory, disable, enable, seed, token."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="Add a chain (its RPC URLs are asked for their chain id first).")
        add.add_argument("chain_id")
        add.add_argument("--name", required=True)
        add.add_argument("--native-symbol", default="ETH")
        add.add_argument("--native-decimals", type=int, default=18)
        add.add_argument("--rpc-url", action="append", default=[], help="Repeat, in order of preference.")
        add.add_argument("--confirmations", type=int, default=12)
        add.add_argument(
            "--front-confirmations",
            type=int,
            default=None,
            help="Deliver from inventory, within the exposure limits, after this many (1: the payment in its "
            "block); default: after --confirmations.",
        )
        add.add_argument("--poll-interval", type=float, default=12.0, help="Seconds between scans.")
        add.add_argument("--explorer-url", default="")
        add.add_argument("--factory-address", default="", help="An already deployed DepositFactory.")
        add.add_argument("--max-lag-blocks", type=int, default=10)
        add.add_argument("--max-fee-per-gas-gwei", type=float, default=0)
        add.add_argument("--vault-gas-threshold", default="0", help="In wei.")
        add.add_argument("--solver-gas-threshold", default="0", help="In wei.")
        add.add_argument("--traces", action="store_true", help="Its RPC offers trace_block.")
        add.add_argument("--devnet", action="store_true")
        add.add_argument(
            "--testnet",
            action="store_true",
            help="A public test network: test-mode organizations may use it.",
        )
        add.add_argument("--no-payments", action="store_true", help="Known, but not offered to payers.")
        sub.add_parser("list", help="Every chain of the registry.")
        check = sub.add_parser("check", help="Each chain's nodes, factory, signers' gas and watcher, now.")
        check.add_argument("chain_id", nargs="*")
        deploy = sub.add_parser(
            "deploy-factory", help="Deploy the deposit factory (CREATE2) through the outbox."
        )
        deploy.add_argument("chain_id")
        deploy.add_argument("--timeout", type=float, default=180.0, help="Seconds to wait for the workers.")
        deploy.add_argument(
            "--retries", type=int, default=2, help="Attempts after a failed one (the next block), default 2."
        )
        for name in ("disable", "enable"):
            toggle = sub.add_parser(name, help=f"{name.title()} taking payments on a chain.")
            toggle.add_argument("chain_id")
        sub.add_parser("seed", help="Import the CHAINS seed again (what `migrate` does).")
        token = sub.add_parser(
            "token",
            help="Record whether a registry token takes EIP-3009 signatures, and its EIP-712 domain "
            "(checked against the token's DOMAIN_SEPARATOR() on its chain).",
        )
        token.add_argument("chain_id")
        token.add_argument("address")
        token.add_argument("--eip3009", action=argparse.BooleanOptionalAction, required=True)
        token.add_argument("--eip712-name", default="", help="The domain's name (real USDC: 'USD Coin').")
        token.add_argument("--eip712-version", default="", help="The domain's version (real USDC: '2').")

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"do_{action.replace('-', '_')}")(**options)

    # --- add -------------------------------------------------------------------------------------

    def do_add(self, *, chain_id: str, **o) -> None:
        if not chain_id.isdigit():
            raise CommandError(f"{chain_id!r} is not a chain id")
        if ChainRow.objects.filter(pk=int(chain_id)).exists():
            raise CommandError(f"chain {chain_id} is already in the registry: edit it in the admin")
        entry = {
            "chain_id": int(chain_id),
            "name": o["name"],
            "native_symbol": o["native_symbol"],
            "native_decimals": o["native_decimals"],
            "rpc_urls": o["rpc_url"],
            "confirmations": o["confirmations"],
            "front_confirmations": o["front_confirmations"],
            "poll_interval_seconds": o["poll_interval"],
            "explorer_url": o["explorer_url"],
            "factory_address": o["factory_address"],
            "max_lag_blocks": o["max_lag_blocks"],
            "max_fee_per_gas_gwei": o["max_fee_per_gas_gwei"],
            "vault_gas_threshold": o["vault_gas_threshold"],
            "solver_gas_threshold": o["solver_gas_threshold"],
            "traces": o["traces"],
            "devnet": o["devnet"],
            "testnet": o["testnet"],
            "takes_payments": not o["no_payments"],
        }
        if o["factory_address"] and not is_address(o["factory_address"]):
            raise CommandError(f"--factory-address {o['factory_address']!r} is not an address")
        try:
            chain = chain_from_entry(entry)
        except ChainError as exc:
            raise CommandError(str(exc)) from None
        if not chain.rpc_urls:
            raise CommandError("give at least one --rpc-url: the service reads and sends through it")
        for url in chain.rpc_urls:
            report = probe(url)
            if not report.reachable:
                raise CommandError(f"{report.label} does not answer: {report.error}")
            if report.chain_id != chain.chain_id:
                raise CommandError(f"{report.label} serves chain {report.chain_id}, not {chain.chain_id}")
        if chain.factory_address:
            w3 = Web3(Web3.HTTPProvider(chain.rpc_urls[0], request_kwargs={"timeout": 10}))
            state = factory_code_state(w3, chain.factory_address)
            if state != "ours":
                raise CommandError(
                    f"{chain.factory_address} on chain {chain.chain_id}: code {state}, not the "
                    "DepositFactory artifact's"
                )
        ChainRow.objects.create(
            chain_id=chain.chain_id,
            name=chain.name,
            native_symbol=chain.native_symbol,
            native_decimals=chain.native_decimals,
            rpc_urls=list(chain.rpc_urls),
            confirmations=chain.confirmations,
            front_confirmations=chain.front_confirmations,
            poll_interval_seconds=chain.poll_interval_seconds,
            explorer_url=chain.explorer_url,
            factory_address=chain.factory_address,
            takes_payments=chain.takes_payments,
            devnet=chain.devnet,
            testnet=chain.testnet,
            max_fee_per_gas_gwei=chain.max_fee_per_gas_gwei,
            max_lag_blocks=chain.max_lag_blocks,
            traces=chain.traces,
            family=chain.family,
            vault_gas_threshold=chain.vault_gas_threshold,
            solver_gas_threshold=chain.solver_gas_threshold,
            source=ChainRow.Source.STAFF,
        )
        registry_forget()
        self.stdout.write(
            f"Added {chain.name} ({chain.chain_id}) with {len(chain.rpc_urls)} RPC URL(s)"
            + (
                ""
                if chain.factory_address
                else f"; deploy its factory: manage.py chains deploy-factory {chain.chain_id}"
            )
        )

    # --- list ------------------------------------------------------------------------------------

    def do_list(self, **o) -> None:
        rows = [["CHAIN", "NAME", "PAYMENTS", "DEVNET", "CONF", "POLL", "FACTORY", "RPC NODES", "SOURCE"]]
        for chain in chains():
            rows.append(
                [
                    str(chain.chain_id),
                    chain.name,
                    "yes" if chain.accepts_payments else "no",
                    "yes" if chain.devnet else "no",
                    str(chain.confirmations),
                    f"{chain.poll_interval_seconds:g}s",
                    chain.factory_address or "-",
                    ", ".join(node_label(u) for u in chain.rpc_urls) or "-",
                    chain.source,
                ]
            )
        self.stdout.write(_table(rows))

    # --- check -----------------------------------------------------------------------------------

    def do_check(self, *, chain_id: list[str], **o) -> None:
        selected = [_chain_arg(value) for value in chain_id] or [
            c for c in chains() if c.rpc_urls or c.accepts_payments
        ]
        rows = [
            [
                "CHAIN",
                "NODE",
                "REACHABLE",
                "CHAIN ID",
                "HEAD",
                "LAG",
                "FACTORY",
                "VAULT GAS",
                "SOLVER GAS",
                "WATCHER LAG",
                "STATUS",
            ]
        ]
        unhealthy = []
        for chain in selected:
            health = chain_health(chain)
            first = True
            for report in health.nodes or [None]:  # type: ignore[list-item]  # a chain without nodes: one row
                lag = (
                    "-"
                    if report is None or report.head is None or health.best_head is None
                    else str(health.best_head - report.head)
                )
                status = "ok" if health.healthy else "; ".join(health.problems)
                if health.healthy and health.low:
                    status = "ok; low gas: " + ", ".join(health.low)
                if not chain.accepts_payments:
                    status = f"({status}; takes no payments)"
                rows.append(
                    [
                        f"{chain.chain_id} {chain.name}" if first else "",
                        report.label if report else "-",
                        ("yes" if report.reachable else f"no ({report.error})") if report else "-",
                        (
                            "-"
                            if report is None or report.chain_id is None
                            else "ok"
                            if report.chain_id == chain.chain_id
                            else f"WRONG ({report.chain_id})"
                        ),
                        str(report.head) if report and report.head is not None else "-",
                        lag,
                        health.factory if first else "",
                        self._gas(health, chain, "vault") if first else "",
                        self._gas(health, chain, "solver") if first else "",
                        (str(health.watcher_lag) if health.watcher_lag is not None else "-") if first else "",
                        status if first else "",
                    ]
                )
                first = False
            if chain.accepts_payments and not health.healthy:
                unhealthy.append(chain)
        self.stdout.write(_table(rows))
        for section in check_sections():  # registered by the apps above (the solver's inventory)
            if len(section) > 1:
                self.stdout.write("\n" + _table(section))
        if not any(c.accepts_payments for c in chains()):
            raise CommandError("no chain takes payments: add one (`chains add`) and deploy its factory")
        if unhealthy:
            raise CommandError(f"unhealthy: {', '.join(f'{c.name} ({c.chain_id})' for c in unhealthy)}")

    @staticmethod
    def _gas(health, chain: Chain, role: str) -> str:
        if role not in health.balances:
            return "-"
        low = " LOW" if role in health.low else ""
        return f"{_units(health.balances[role], chain.native_decimals)} {chain.native_symbol}{low}"

    # --- deploy-factory --------------------------------------------------------------------------

    def do_deploy_factory(self, *, chain_id: str, timeout: float, retries: int = 2, **o) -> None:
        chain = _chain_arg(chain_id)
        if not chain.rpc_urls:
            raise CommandError(f"{chain.name} has no RPC URL")
        try:
            address = factory_address()
        except FactoryError as exc:
            raise CommandError(str(exc)) from None
        w3 = Web3(Web3.HTTPProvider(chain.rpc_urls[0], request_kwargs={"timeout": 10}))
        report = probe(chain.rpc_urls[0])
        if not report.reachable or report.chain_id != chain.chain_id:
            raise CommandError(f"{report.label}: {report.error or f'serves chain {report.chain_id}'}")
        if chain.factory_address and chain.factory_address != address:
            raise CommandError(f"{chain.name} already records the factory {chain.factory_address}")
        state = factory_code_state(w3, address)
        if state == "different":
            raise CommandError(f"{address} holds other code than the DepositFactory artifact's")
        if state == "ours":
            owner = factory_owner(w3, address)
            if owner.lower() != signer_address(Signer.VAULT).lower():
                raise CommandError(f"the factory at {address} is owned by {owner}, not the vault")
            changed = factory_record(chain.chain_id, address)
            self.stdout.write(
                f"{chain.name}: the deposit factory is at {address}"
                + (" (recorded now)" if changed else " (already recorded; nothing sent)")
            )
            return
        if missing := deployer_proxy_missing(w3, chain.name):
            raise CommandError(missing)
        # A deployment that failed (its estimate reverted, or it reverted on chain) is asked again under the next
        # attempt's key: nothing was created, and the same address is created at most once whatever is sent.
        # A chain that has just started can refuse the first estimate; a second, a block later, goes through.
        latest, attempt = factory_deploy_attempt(chain)
        for _ in range(retries + 1):
            if latest is None or latest.status == OutboxTx.Status.FAILED:
                attempt += 1
                latest = factory_deploy_submit(chain, attempt)
            self.stdout.write(
                f"{chain.name}: deploying the deposit factory at {address} (outbox {latest.key}), "
                "signed by the deployer in the signing worker…"
            )
            tx = outbox_wait(latest, timeout=timeout)
            if tx.in_flight:
                raise CommandError(still_in_flight(tx, timeout))
            if tx.status == OutboxTx.Status.MINED:
                break
            self.stderr.write(f"{chain.name}: deployment {tx.key} failed: {tx.error}")
            if factory_code_state(w3, address) == "ours":
                break  # an earlier attempt created it (a CREATE2 address is created once): this one had to fail
            latest = tx
            _next_block(w3)
        else:
            raise CommandError(f"the deployment failed {retries + 1} times; the last: {tx.error}")
        if factory_code_state(w3, address) != "ours":
            raise CommandError(f"the deployment was mined but {address} does not hold the factory's code")
        factory_record(chain.chain_id, address)
        made_by = f"transaction {tx.tx_hash}" if tx.status == OutboxTx.Status.MINED else "an earlier attempt"
        self.stdout.write(f"{chain.name}: the deposit factory is at {address} ({made_by})")

    # --- disable / enable / seed -----------------------------------------------------------------

    def _toggle(self, chain_id: str, takes: bool) -> None:
        chain = _chain_arg(chain_id)
        row = ChainRow.objects.get(pk=chain.chain_id)
        if row.takes_payments == takes:
            self.stdout.write(f"{chain.name} already {'takes' if takes else 'takes no'} payments")
            return
        row.takes_payments, row.source = takes, ChainRow.Source.STAFF
        row.save(update_fields=["takes_payments", "source"])
        self.stdout.write(
            f"{chain.name} {'takes payments again' if takes else 'takes no new payments'}"
            + ("" if takes else "; what is in flight there still settles")
        )

    def do_disable(self, *, chain_id: str, **o) -> None:
        self._toggle(chain_id, False)

    def do_enable(self, *, chain_id: str, **o) -> None:
        self._toggle(chain_id, True)

    def do_token(self, *, chain_id: str, address: str, eip3009: bool, **o) -> None:
        chain = _chain_arg(chain_id)
        if not is_address(address):
            raise CommandError(f"{address!r} is not an address")
        token = Token.objects.filter(chain_id=chain.chain_id, address=to_checksum_address(address)).first()
        if token is None:
            raise CommandError(
                f"no token at {address} on chain {chain.chain_id} in the registry: load its token list first "
                "(`manage.py load_tokens FILE`)"
            )
        name, version = o["eip712_name"], o["eip712_version"]
        if eip3009:
            if not (name and version):
                raise CommandError(
                    "--eip3009 needs --eip712-name and --eip712-version (real USDC: 'USD Coin', '2')"
                )
            try:
                problem = domain_problem(
                    web3_for(chain),
                    address=token.address,
                    name=name,
                    version=version,
                    chain_id=chain.chain_id,
                )
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            if problem:
                raise CommandError(f"{token.symbol} on chain {chain.chain_id}: {problem}")
        token.eip3009, token.eip712_name, token.eip712_version = eip3009, name[:100], version[:20]
        token.save(update_fields=["eip3009", "eip712_name", "eip712_version"])
        self.stdout.write(
            f"{token.symbol} on chain {chain.chain_id} "
            + (
                f"takes EIP-3009 signatures in the domain {name!r} version {version!r}"
                if eip3009
                else "takes no EIP-3009 signatures"
            )
        )

    def do_seed(self, **o) -> None:
        created, updated = chains_seed()
        self.stdout.write(f"CHAINS seed: {created} chain(s) created, {updated} updated")


def _next_block(w3, timeout: float = 30.0) -> None:
    """Wait for the chain's next block (what an attempt after a refused estimate waits for)."""
    start = w3.eth.block_number
    deadline = time.monotonic() + timeout
    while w3.eth.block_number <= start and time.monotonic() < deadline:
        time.sleep(0.5)
