"""What each role may do, in the platform's terms (platform_api.models.Permission) plus the developer's tools.

owner and admin: everything; developer: API keys and webhooks, and read everything; viewer: read.
"""

from __future__ import annotations

from dashboard.models import Role

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


def may(role: str, action: str) -> bool:
    return action in ALLOWED.get(role, frozenset())
