"""The development wallet for one order (or quick payment): a real transfer on its devnet to its deposit address."""

import uuid

from django.core.management.base import BaseCommand, CommandError

from chains.devnet import DevnetError
from chains.registry import chain_get
from chains.wallet import devnet_transfer
from orders.models import Order
from platform_api.models import QuickPayment


class Command(BaseCommand):
    help = (
        "Pay an order (or a quick payment, qp_...) on a devnet: send its source token (or native coin) from an "
        "anvil account to its deposit address, and print the transaction hash. Devnets only."
    )

    def add_arguments(self, parser):
        parser.add_argument("order_id")
        parser.add_argument(
            "--amount", type=int, help="In the token's smallest unit; default the order's srcAmount."
        )
        parser.add_argument("--from-account", type=int, default=1, help="Anvil account index (default 1).")

    def handle(self, *args, order_id: str, amount: int | None, from_account: int, **options):
        chain_id, token, to, price = self._payment(order_id)
        chain = chain_get(chain_id)
        if chain is None:
            raise CommandError(f"Chain {chain_id} is not in the registry.")
        amount = price if amount is None else amount
        if amount <= 0:
            raise CommandError("--amount must be positive.")
        try:
            tx_hash = devnet_transfer(
                chain=chain, token=token, to=to, amount=amount, from_account=from_account
            )
        except DevnetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(tx_hash)

    @staticmethod
    def _payment(payment_id: str) -> tuple[int, str, str, int]:
        """(chain id, token, deposit address, amount) of an order or a quick payment."""
        if payment_id.startswith("qp_"):
            quick = QuickPayment.objects.filter(pk=payment_id).first()
            if quick is None:
                raise CommandError(f"No quick payment {payment_id}.")
            return quick.chain_id, quick.token_address, quick.deposit_address, int(quick.amount)
        try:
            order = Order.objects.get(pk=uuid.UUID(payment_id))
        except (ValueError, Order.DoesNotExist):
            raise CommandError(f"No order {payment_id}.") from None
        return order.src_chain, order.src_token_address, order.global_address, int(order.src_amount)
