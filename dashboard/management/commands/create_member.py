"""`manage.py create_member --org acme --email owner@shop.example --role owner`: a member of an organization.

With `--password-stdin` the password is read from standard input (checked by the password validators);
otherwise the command prints a one-time sign-in link where the member chooses it (an invitation, valid
DASHBOARD_INVITATION_HOURS). An owner then sets up two-factor sign-in at their first sign-in.
"""

from __future__ import annotations

import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from dashboard.members import MemberError, invitation_create, member_create
from dashboard.models import Role
from platform_api.models import Organization
from platform_api.services import organization_get_or_create


class Command(BaseCommand):
    help = (
        "Create a dashboard member of an organization (prints a one-time sign-in link, or reads a password)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="The organization's slug.")
        parser.add_argument("--email", required=True)
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument(
            "--password-stdin", action="store_true", help="Read the password from standard input."
        )

    def handle(self, *args, org: str, email: str, role: str, password_stdin: bool, **options):
        organization = Organization.objects.filter(slug=org).first()
        if organization is None:  # as create_api_key does: a new install's first command makes it
            try:
                organization = organization_get_or_create(slug=org)
            except (ValueError, ValidationError) as exc:
                raise CommandError(f"{org!r} is not an organization slug: {exc}") from None
            self.stdout.write(f"Created organization {organization.slug}.")
        try:
            if password_stdin:
                password = sys.stdin.readline().rstrip("\n")
                member = member_create(organization=organization, email=email, role=role, password=password)
                self.stdout.write(
                    f"Created {member.role} {member.user.email} of {organization.slug}: sign in at /dashboard/sign-in/"
                )
                return
            link = invitation_create(organization=organization, email=email, role=role, invited_by=None)
        except (MemberError, ValidationError) as exc:
            messages = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
            raise CommandError(" ".join(messages)) from None
        self.stdout.write(
            f"One-time sign-in link for {email} ({role} of {organization.slug}), valid {link.hours} h:"
        )
        self.stdout.write(link.url)
