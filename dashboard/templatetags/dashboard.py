"""Template helpers of the dashboard."""

from django import template

from dashboard.roles import may as role_may

register = template.Library()


@register.filter
def may(member, action: str) -> bool:
    """`{% if member|may:"write" %}`: whether the member's role allows `action` (dashboard.roles)."""
    return member is not None and role_may(member.role, action)
