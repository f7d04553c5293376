"""`manage.py decisions`: the index of docs/decisions/ (docs/decisions.md is this output; a test keeps the two
equal)."""

from django.core.management.base import BaseCommand

from config.decisions import decisions_index


class Command(BaseCommand):
    help = "Print the index of the decisions: each topic's file under docs/decisions/ and its status."

    def handle(self, *args, **options):
        self.stdout.write(decisions_index(), ending="")
