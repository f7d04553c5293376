"""The development wallet for one order (or quick payment): a real transfer on its devnet to its deposit address.

What a payment asks for comes from the app that owns it (`chains.handlers.payable`).
"""

from django.core.management.base import BaseCommand, CommandError

from chains.devnet import DevnetError
from chains.handlers import payment_due
from chains.registry import chain_get
from chains.wallet import devnet_transfer


class Command(BaseCommand):
    help = (
        "Pay an order, a quick payment (qp_...), a refund that requires funding (re_...) or a refund balance's "
        "top-up (rtu_..., with --amount) on a devnet: send its token (or native coin) from an anvil account "
        "to its deposit address, and print the transaction hash. Devnets only."
    )

    def add_arguments(self, parser):
        parser.add_argument("order_id", help="An order's id, or a qp_, re_ or rtu_ id.")
        parser.add_argument(
            "--amount",
            type=int,
            help="In the token's smallest unit; default what it asks (an order's srcAmount, what a refund lacks).",
        )
        parser.add_argument("--from-account", type=int, default=1, help="Anvil account index (default 1).")

    def handle(self, *args, order_id: str, amount: int | None, from_account: int, **options):
        chain_id, token, to, price = self._payment(order_id)
        chain = chain_get(chain_id)
        if chain is None:
            raise CommandError(f"Chain {chain_id} is not in the registry.")
        if amount is None and price == 0:
            raise CommandError(f"{order_id} asks for no amount in particular (a top-up): give --amount.")
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
        due = payment_due(payment_id)
        if due is None:
            raise CommandError(f"No order or quick payment {payment_id}.")
        return due
