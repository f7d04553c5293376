from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from webhooks.models import WebhookDelivery
from webhooks.services import webhook_deliveries_requeue_failed


class Command(BaseCommand):
    help = (
        "Queue failed webhook deliveries for another attempt, e.g. after a merchant's outage. "
        "Each gets one more attempt with the same body, signature and delivery id."
    )

    def add_arguments(self, parser):
        parser.add_argument("--webhook", help="Only this endpoint (wh_...).")
        parser.add_argument("--org", help="Only this organization (slug).")
        parser.add_argument("--since", help="Only deliveries created at or after this ISO 8601 time.")
        parser.add_argument("--until", help="Only deliveries created at or before this ISO 8601 time.")
        parser.add_argument("--dry-run", action="store_true", help="Count, change nothing.")

    def handle(self, *args, webhook=None, org=None, since=None, until=None, dry_run=False, **options):
        deliveries = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.FAILED, is_test=False)
        if webhook:
            deliveries = deliveries.filter(endpoint_id=webhook)
        if org:
            deliveries = deliveries.filter(endpoint__organization__slug=org)
        for name, value, lookup in (
            ("--since", since, "created_at__gte"),
            ("--until", until, "created_at__lte"),
        ):
            if value:
                moment = parse_datetime(value)
                if moment is None:
                    raise CommandError(f"{name} must be an ISO 8601 date-time.")
                deliveries = deliveries.filter(**{lookup: moment})
        if dry_run:
            self.stdout.write(f"{deliveries.count()} failed deliveries match; nothing changed (--dry-run).")
            return
        count = webhook_deliveries_requeue_failed(deliveries=deliveries)
        self.stdout.write(f"Queued {count} failed deliveries for another attempt.")
