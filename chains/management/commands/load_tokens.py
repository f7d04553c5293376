from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from chains.tokens import TokenListError, token_list_load


class Command(BaseCommand):
    help = "Load or update tokens from a token list (the common token-list JSON format). Defaults to the shipped list."

    def add_arguments(self, parser):
        parser.add_argument("file", nargs="?", default=str(settings.TOKEN_LIST_FILE))

    def handle(self, *args, file: str, **options):
        try:
            created, updated = token_list_load(Path(file))
        except TokenListError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Loaded {file}: {created} tokens created, {updated} updated.")
