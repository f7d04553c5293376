"""`manage.py balance_adjust --org SLUG --chain ID --token ADDRESS --amount SIGNED --reason TEXT [--key KEY]`:
an `adjustment` balance transaction for an organization (a fee refunded by agreement, a correction), shown in
its `/api/v1/balance-transactions`. Once per `--key` (default: a new one each time). Everything is checked
before anything is written."""

from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chains.evm import is_address
from chains.registry import chain_get
from ledger.balance import Type, balance_record
from platform_api.models import Organization


class Command(BaseCommand):
    help = "Record an adjustment balance transaction for an organization."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, help="The organization's slug.")
        parser.add_argument("--chain", required=True, type=int)
        parser.add_argument("--token", required=True, help="The token's address (the zero address: native).")
        parser.add_argument("--amount", required=True, help="Signed, in the token's base units: -48000.")
        parser.add_argument("--reason", required=True)
        parser.add_argument("--key", help="The business key, to record it once (default: a new one).")

    def handle(self, *args, **options):
        organization = Organization.objects.filter(slug=options["org"]).first()
        if organization is None:
            raise CommandError(f"no organization {options['org']!r}")
        if chain_get(options["chain"]) is None:
            raise CommandError(f"chain {options['chain']} is not in the registry")
        if not is_address(options["token"]):
            raise CommandError("--token must be an address: 0x and 40 hexadecimal characters")
        text = options["amount"].strip()
        if not text.lstrip("-").isdigit() or len(text) > 79 or int(text) == 0:
            raise CommandError("--amount must be a whole, non-zero number of base units, signed")
        amount = int(text)
        reason = options["reason"].strip()
        if not reason or len(reason) > 300:
            raise CommandError("--reason must say why, in at most 300 characters")
        key = options["key"] or f"adjustment:{uuid.uuid4()}"
        row = balance_record(
            key=f"{organization.pk}:{key}",
            organization_id=organization.pk,
            type=Type.ADJUSTMENT,
            sign=1 if amount > 0 else -1,
            chain_id=options["chain"],
            token_address=options["token"],
            gross=abs(amount),
            source_id=key[:64],
            description=reason,
        )
        self.stdout.write(f"{row.id}: {amount} on chain {row.chain_id} for {organization.slug}")
