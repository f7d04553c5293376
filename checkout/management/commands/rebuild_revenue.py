from django.core.management.base import BaseCommand, CommandError

from checkout.analytics import revenue_rebuild
from platform_api.models import Organization


class Command(BaseCommand):
    help = (
        "Recompute the analytics rollup (revenue per UTC day, link, chain and token) from the completed "
        "transactions: after importing transactions by hand, or to check it. Safe while payments complete."
    )

    def add_arguments(self, parser):
        parser.add_argument("--org", help="Only this organization (slug); default: all.")

    def handle(self, *args, org=None, **opts):
        organization = None
        if org:
            organization = Organization.objects.filter(slug=org).first()
            if organization is None:
                raise CommandError(f"No organization {org!r}.")
        rows = revenue_rebuild(organization=organization)
        self.stdout.write(f"{rows} rollup rows written.")
