"""`django.contrib.admin` with the staff's site (config.admin_site, loaded once the apps are) as
`admin.site`, where every app's admin registers."""

from django.contrib.admin.apps import AdminConfig


class StaffAdminConfig(AdminConfig):
    default_site = "config.admin_site.StaffAdminSite"
