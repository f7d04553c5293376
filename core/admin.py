"""Admin building blocks that no app owns."""

import json
from datetime import UTC, datetime
from typing import Any

from django.contrib import admin
from django.utils.html import format_html

from core.models import ClusterIdentity


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """For records that only the service writes (events, deposits, sessions): staff look, never edit."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def short_hex(value: str | None, *, href: str | None = None):
    """A hash or address as `0x1234…abcd`, the whole value on hover (and copied with a select-all)."""
    if not value:
        return "-"
    shown = value if len(value) <= 14 else f"{value[:6]}…{value[-4:]}"
    if href:
        return format_html('<a href="{}" title="{}" class="nowrap">{}</a>', href, value, shown)
    return format_html('<span title="{}" class="nowrap">{}</span>', value, shown)


def moment(value: datetime | None):
    """A time on one line, with seconds, in UTC: `2026-11-24 19:15:18`."""
    if value is None:
        return "-"
    return format_html('<span class="nowrap">{}</span>', value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"))


def pretty_json(value: Any):
    """A JSON document indented, in a box of its own."""
    if value in (None, {}, []):
        return "-"
    return format_html('<pre class="json">{}</pre>', json.dumps(value, indent=2, sort_keys=True, default=str))


@admin.register(ClusterIdentity)
class ClusterIdentityAdmin(ReadOnlyModelAdmin):
    """What every node of this database must share (core/cluster.py): written by `migrate`, read-only here."""

    list_display = ("code_version", "migrated_at", "encryption_key_fingerprint", "secret_key_fingerprint")
