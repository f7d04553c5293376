from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_slug

from platform_api.models import Permission
from platform_api.services import api_key_create, organization_get_or_create
from platform_api.testmode import organization_sandbox


class Command(BaseCommand):
    help = (
        "Create an API key for an organization (created if it does not exist). "
        "The full key is printed once, as the last line of the output."
    )

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="Organization slug.")
        parser.add_argument("--name", required=True, help="A name for the key, e.g. 'production server'.")
        parser.add_argument(
            "--permissions", default="read", help="Comma-separated: read, write, admin (default: read)."
        )
        parser.add_argument("--org-name", help="Display name when the organization is created.")
        parser.add_argument("--contact-email", help="Contact address when the organization is created.")
        parser.add_argument("--expires-at", help="ISO 8601 expiry, e.g. 2027-01-01T00:00:00Z.")
        parser.add_argument(
            "--test",
            action="store_true",
            help="A test-mode key (svc_test_...) of the organization's test mode, made on first use: test "
            "chains only, its own objects and events.",
        )

    def handle(
        self,
        *args,
        org,
        name,
        permissions,
        org_name=None,
        contact_email=None,
        expires_at=None,
        test=False,
        **opts,
    ):
        try:
            validate_slug(org)
        except ValidationError:
            raise CommandError("--org must be a slug: letters, digits, hyphens and underscores.") from None
        wanted = [p.strip() for p in permissions.split(",") if p.strip()]
        unknown = [p for p in wanted if p not in Permission.values]
        if not wanted or unknown:
            raise CommandError(
                f"--permissions must be a comma-separated subset of {', '.join(Permission.values)}."
            )
        expiry = None
        if expires_at:
            try:
                expiry = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
            except ValueError:
                raise CommandError("--expires-at must be ISO 8601.") from None
            if expiry.tzinfo is None:
                expiry = expiry.replace(tzinfo=UTC)
        organization = organization_get_or_create(slug=org, name=org_name)
        if contact_email and not organization.contact_email:
            organization.contact_email = contact_email
            organization.save(update_fields=["contact_email"])
        if test:
            organization = organization_sandbox(organization)
        api_key, raw_key = api_key_create(
            organization=organization, name=name, permissions=wanted, expires_at=expiry
        )
        self.stdout.write(
            f"Created API key {api_key.id} ({','.join(api_key.permissions)}) for organization '{organization.slug}'."
        )
        self.stdout.write("Store it now; it is not shown again:")
        self.stdout.write(raw_key)
