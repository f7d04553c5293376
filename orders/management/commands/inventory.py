"""`manage.py inventory list|set|exposure`: the solver's stock per chain and token, from which swap orders are
delivered as soon as their deposit is confirmed (orders/inventory.py), and its refills through the relay
provider; and the exposure limits within which it delivers on first sight of a payment (orders/fronting.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from orders.admin.inventory import ExposureLimitForm, InventoryForm
from orders.inventory import inventory_rows
from orders.models import ExposureLimit, Inventory


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


class Command(BaseCommand):
    help = "The solver's inventories: list them (with the stock on chain), or set one's marks and limits."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser(
            "list", help="Every inventory: what the solver holds, what is fronted, its marks and refill."
        )
        put = sub.add_parser("set", help="Create or change the inventory of TOKEN on CHAIN_ID.")
        put.add_argument("chain_id", type=int)
        put.add_argument("token", help="the token's address; 0x000…000 for the native coin")
        put.add_argument("--low", type=int, required=True, help="refill below this (smallest units)")
        put.add_argument("--target", type=int, required=True, help="what a refill brings the stock back to")
        put.add_argument(
            "--max-order", type=int, required=True, help="the largest order delivered from stock"
        )
        put.add_argument(
            "--max-outstanding", type=int, required=True, help="at most this much fronted and not yet swept"
        )
        put.add_argument(
            "--refill-from", required=True, metavar="CHAIN_ID:TOKEN", help="where the vault pays refills from"
        )
        put.add_argument("--disable", action="store_true", help="front nothing and refill nothing")
        limit = sub.add_parser(
            "exposure",
            help="Create or change what may be delivered against on first sight of payments in TOKEN on CHAIN_ID "
            "(the chain's row sets front_confirmations).",
        )
        limit.add_argument("chain_id", type=int, help="the chain the payments are made on")
        limit.add_argument("token", help="the ERC-20 token paid")
        limit.add_argument(
            "--max-payment", type=int, required=True, help="the largest payment (smallest units)"
        )
        limit.add_argument("--max-per-payer", type=int, required=True, help="per payer address in the window")
        limit.add_argument("--window", type=int, default=3600, help="the per-payer window, in seconds")
        limit.add_argument(
            "--max-outstanding", type=int, required=True, help="delivered against and not yet confirmed"
        )
        limit.add_argument("--disable", action="store_true", help="every payment waits for its confirmations")

    def handle(self, *args, action: str, **options):
        if action == "list":
            self.stdout.write(_table(inventory_rows()))
            return
        if action == "exposure":
            self._exposure(options)
            return
        chain, _, token = options["refill_from"].partition(":")
        if not chain.isdigit() or not token:
            raise CommandError(
                "--refill-from: give CHAIN_ID:TOKEN, e.g. 8453:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"
            )
        data = {
            "chain_id": options["chain_id"],
            "token": options["token"],
            "low_mark": options["low"],
            "target": options["target"],
            "max_order": options["max_order"],
            "max_outstanding": options["max_outstanding"],
            "refill_chain_id": int(chain),
            "refill_token": token,
            "enabled": not options["disable"],
        }
        existing = Inventory.objects.filter(
            chain_id=data["chain_id"], token=str(data["token"]).lower()
        ).first()
        form = InventoryForm(data=data, instance=existing)
        if not form.is_valid():
            errors = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in form.errors.items())
            raise CommandError(errors)
        with transaction.atomic():
            inventory = form.save()
        self.stdout.write(
            f"{'Changed' if existing else 'Added'} the inventory of {inventory.token} on chain {inventory.chain_id}: "
            f"low {inventory.low_mark}, target {inventory.target}, max order {inventory.max_order}, "
            f"max outstanding {inventory.max_outstanding}, refilled from {inventory.refill_token} on chain "
            f"{inventory.refill_chain_id}{'' if inventory.enabled else ' (disabled)'}"
        )

    def _exposure(self, options) -> None:
        data = {
            "chain_id": options["chain_id"],
            "token": options["token"],
            "max_payment": options["max_payment"],
            "max_per_payer": options["max_per_payer"],
            "payer_window_seconds": options["window"],
            "max_outstanding": options["max_outstanding"],
            "enabled": not options["disable"],
        }
        existing = ExposureLimit.objects.filter(
            chain_id=data["chain_id"], token=str(data["token"]).lower()
        ).first()
        form = ExposureLimitForm(data=data, instance=existing)
        if not form.is_valid():
            errors = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in form.errors.items())
            raise CommandError(errors)
        limit = form.save()
        self.stdout.write(
            f"{'Changed' if existing else 'Added'} the exposure limit of {limit.token} on chain {limit.chain_id}: "
            f"max payment {limit.max_payment}, max per payer {limit.max_per_payer} in "
            f"{limit.payer_window_seconds} s, max outstanding {limit.max_outstanding}"
            f"{'' if limit.enabled else ' (disabled)'}"
        )
