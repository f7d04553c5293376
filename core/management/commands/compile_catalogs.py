"""Compile the translation catalogs (`locale/*/LC_MESSAGES/django.po`) into the `.mo` files Django reads."""

from django.conf import settings
from django.core.management.base import BaseCommand

from core.locales import compile_catalogs


class Command(BaseCommand):
    help = "Compile locale/*/LC_MESSAGES/django.po into .mo files (those missing or older than their .po)."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="Compile every catalog, stale or not.")

    def handle(self, *args, force: bool = False, **options):
        written = compile_catalogs(settings.BASE_DIR, force=force)
        for path in written:
            self.stdout.write(f"compiled {path.relative_to(settings.BASE_DIR)}")
