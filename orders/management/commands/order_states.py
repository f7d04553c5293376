"""`manage.py order_states`: the order's state machine as declared in orders.states, as a Markdown table
(docs/architecture.md shows this output; a test keeps the two equal)."""

from django.core.management.base import BaseCommand

from orders.states import table_markdown


class Command(BaseCommand):
    help = "Print the order's declared state machine (statuses, moves, events, settlement steps)."

    def handle(self, *args, **options):
        self.stdout.write(table_markdown())
