from django.conf import settings
from django.core.management.base import BaseCommand

from audit.services import audit_events_purge


class Command(BaseCommand):
    help = (
        "Delete audit events older than the retention period (AUDIT_RETENTION_DAYS, default 90), in batches."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=settings.AUDIT_PURGE_BATCH_SIZE)

    def handle(self, *args, batch_size: int, **options):
        deleted = audit_events_purge(batch_size=batch_size)
        self.stdout.write(f"Deleted {deleted} audit events older than {settings.AUDIT_RETENTION_DAYS} days.")
