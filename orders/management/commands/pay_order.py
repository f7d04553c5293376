"""The development wallet for one order: a real transfer on its devnet to its deposit address."""

import uuid

from django.core.management.base import BaseCommand, CommandError

from chains.devnet import DevnetError
from chains.registry import chain_get
from chains.wallet import devnet_transfer
from orders.models import Order


class Command(BaseCommand):
    help = (
        "Pay an order on a devnet: send its source token (or native coin) from an anvil account to its "
        "deposit address, and print the transaction hash. Devnets only."
    )

    def add_arguments(self, parser):
        parser.add_argument("order_id")
        parser.add_argument(
            "--amount", type=int, help="In the token's smallest unit; default the order's srcAmount."
        )
        parser.add_argument("--from-account", type=int, default=1, help="Anvil account index (default 1).")

    def handle(self, *args, order_id: str, amount: int | None, from_account: int, **options):
        try:
            order = Order.objects.get(pk=uuid.UUID(order_id))
        except (ValueError, Order.DoesNotExist):
            raise CommandError(f"No order {order_id}.") from None
        chain = chain_get(order.src_chain)
        if chain is None:
            raise CommandError(f"Chain {order.src_chain} is not in the registry.")
        amount = int(order.src_amount) if amount is None else amount
        if amount <= 0:
            raise CommandError("--amount must be positive.")
        try:
            tx_hash = devnet_transfer(
                chain=chain, token=order.src_token_address, to=order.global_address, amount=amount,
                from_account=from_account,
            )  # fmt: skip
        except DevnetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(tx_hash)
