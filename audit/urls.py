from django.urls import path

from audit.views import AuditEventListView

urlpatterns = [
    path("events", AuditEventListView.as_view(), name="events"),
]
