"""What each role may do, in the dashboard and through the API's services.

owner and admin: everything; developer: read everything, and the developer's tools (API keys, webhooks);
viewer: read. Owners alone invite or remove owners (dashboard.members).

Whatever a member does goes through the API's services with the member's role as its limit, in the API's
levels (API_PERMISSION): an API key a member makes has at most that level, and a member revokes only keys
within it. So a developer makes `read` keys only (a `write` key could change where a link pays out, which
their role may not), and an owner's or admin's production key is not a developer's to revoke.
"""

from __future__ import annotations

from django.db import models


class Role(models.TextChoices):
    """A member's role in their organization (dashboard.models.Member)."""

    OWNER = "owner", "owner"
    ADMIN = "admin", "admin"
    DEVELOPER = "developer", "developer"
    VIEWER = "viewer", "viewer"


READ = "read"  # every page
WRITE = "write"  # payment links, products, discount codes, customers
DEVELOP = "develop"  # API keys, webhooks
ADMIN = "admin"  # members, settings, branding

ALLOWED: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset({READ, WRITE, DEVELOP, ADMIN}),
    Role.ADMIN: frozenset({READ, WRITE, DEVELOP, ADMIN}),
    Role.DEVELOPER: frozenset({READ, DEVELOP}),
    Role.VIEWER: frozenset({READ}),
}


# The most a member of each role may do through the API's services (platform_api.models.Permission).
API_PERMISSION: dict[str, str] = {
    Role.OWNER: "admin",
    Role.ADMIN: "admin",
    Role.DEVELOPER: "read",
    Role.VIEWER: "read",
}
# In test mode (platform_api.testmode) no real money moves and nothing pays out on a live chain: a developer
# makes the `write` keys that `checkout-cli trigger` and an integration's tests need.
TEST_MODE_API_PERMISSION: dict[str, str] = API_PERMISSION | {Role.DEVELOPER: "write"}


def may(role: str, action: str) -> bool:
    return action in ALLOWED.get(role, frozenset())
