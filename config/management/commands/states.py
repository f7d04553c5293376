"""`manage.py states`: every status column's declared state machine (docs/architecture.md shows this output;
a test keeps the two equal)."""

from django.core.management.base import BaseCommand

from config.states import states_markdown


class Command(BaseCommand):
    help = (
        "Print every status column's state machine: its statuses, the moves between them, what they announce."
    )

    def handle(self, *args, **options):
        self.stdout.write(states_markdown(), ending="")
