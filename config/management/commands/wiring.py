"""`manage.py wiring`: every registration that carries an edge up the layers (docs/architecture.md shows this
output; a test keeps the two equal)."""

from django.core.management.base import BaseCommand

from config.wiring import wiring_markdown


class Command(BaseCommand):
    help = (
        "Print every registration: deposit and outbox handlers and observers, order-event subscribers, "
        "signals and their receivers, other registries, beat tasks with the module of their code."
    )

    def handle(self, *args, **options):
        self.stdout.write(wiring_markdown(), ending="")
