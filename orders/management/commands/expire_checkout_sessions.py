from django.core.management.base import BaseCommand

from orders.lifecycle import orders_expire_unpaid
from orders.sessions import checkout_sessions_expire_due


class Command(BaseCommand):
    help = (
        "Expire open checkout sessions and unpaid orders whose time has passed (beat does this every minute)."
    )

    def handle(self, *args, **options):
        sessions = checkout_sessions_expire_due()
        orders = orders_expire_unpaid()
        self.stdout.write(f"Expired {sessions} checkout sessions and {orders} unpaid orders.")
