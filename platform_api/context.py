"""Who made a request and how, for services that audit what they write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.http import client_ip

if TYPE_CHECKING:
    from platform_api.models import ApiKey, Organization


@dataclass(frozen=True)
class RequestContext:
    """Who made a request and how: passed to services so they can audit what they write."""

    organization: Organization | None
    api_key: ApiKey | None
    ip_address: str
    method: str
    path: str
    # Who acted, as the audit log names them: `api_key:ak_...`, `member:mem_...` (the dashboard) or
    # `staff:<username>` (the admin).
    actor: str = ""
    # The most the actor may do, in the API's levels (`read` < `write` < `admin`): a key's highest permission,
    # a member's role's (dashboard.roles.API_PERMISSION); staff and the service itself: `admin`. A service
    # that hands out power (a new API key) gives no more than this.
    permission: str = "admin"

    def allows(self, required: str) -> bool:
        from platform_api.models import PERMISSION_RANK, Permission

        return PERMISSION_RANK[Permission(self.permission)] >= PERMISSION_RANK[Permission(required)]

    @classmethod
    def for_staff(cls, request, organization: Organization) -> RequestContext:
        """A staff action in the admin, audited like an API action under the resource's organization."""
        return cls(
            organization=organization,
            api_key=None,
            ip_address=client_ip(request),
            method=request.method,
            path=request.path,
            actor=f"staff:{request.user.get_username()}" if getattr(request, "user", None) else "staff",
        )

    @classmethod
    def for_member(cls, request, member) -> RequestContext:
        """A member's action in the dashboard, audited with the member as the actor, as powerful as their
        role (`member.api_permission`), in the organization the page acts for (its test mode's, in test
        mode: dashboard.auth.member_view)."""
        organization = getattr(request, "organization", None) or member.organization
        return cls(
            organization=organization,
            api_key=None,
            ip_address=client_ip(request),
            method=request.method,
            path=request.path,
            actor=f"member:{member.id}",
            permission=member.api_permission_in(organization),
        )

    @classmethod
    def from_request(cls, request) -> RequestContext:
        api_key = getattr(request, "auth", None)
        return cls(
            organization=api_key.organization if api_key is not None else None,
            api_key=api_key,
            ip_address=client_ip(request),
            method=request.method,
            path=request.path,
            actor=f"api_key:{api_key.id}" if api_key is not None else "",
            permission=api_key.highest_permission if api_key is not None else "read",
        )
