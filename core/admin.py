"""Admin building blocks that no app owns."""

from django.contrib import admin


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """For records that only the service writes (events, deposits, sessions): staff look, never edit."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
