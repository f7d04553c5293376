from django.core.management.base import BaseCommand

from checkout.sessions import sessions_expire_due
from orders.services import orders_expire_unpaid


class Command(BaseCommand):
    help = (
        "Expire open checkout sessions and unpaid orders whose time has passed (beat does this every minute)."
    )

    def handle(self, *args, **options):
        sessions = sessions_expire_due()
        orders = orders_expire_unpaid()
        self.stdout.write(f"Expired {sessions} checkout sessions and {orders} unpaid orders.")
