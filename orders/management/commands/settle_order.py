"""Re-drive one order's settlement now (idempotent): the same service the workers and the admin call."""

import uuid

from django.core.management.base import BaseCommand, CommandError

from orders.models import Order
from orders.settlement import settle_order


class Command(BaseCommand):
    help = (
        "Move an order on as far as it can go now (quote, sweep, relay, execute, refund) and print its status. "
        "Safe to run any number of times: every step is asked for once, by business key. Transactions are "
        "signed by the workers, never by this command."
    )

    def add_arguments(self, parser):
        parser.add_argument("order_id")

    def handle(self, *args, order_id: str, **options):
        try:
            before = Order.objects.values_list("status", flat=True).get(pk=uuid.UUID(order_id))
        except (ValueError, Order.DoesNotExist):
            raise CommandError(f"No order {order_id}.") from None
        after = settle_order(order_id, actor="manage.py settle_order")
        self.stdout.write(f"{order_id}: {before} -> {after}" if after != before else f"{order_id}: {after}")
