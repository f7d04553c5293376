"""The tenant kernel's own resources under /api/v1: API keys. Every other resource is mounted by its app
(config/urls.py)."""

from django.urls import path

from core.inputs import register_converters
from platform_api import views

register_converters()

urlpatterns = [
    path("api-keys", views.ApiKeyCollectionView.as_view(), name="api-keys"),
    path("api-keys/<public_id:key_id>", views.ApiKeyDetailView.as_view(), name="api-key-detail"),
]
