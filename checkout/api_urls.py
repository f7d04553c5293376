"""The platform interface's checkout sessions (`cs_`), under /api/v1."""

from django.urls import path

from checkout import views
from core.inputs import register_converters

register_converters()

urlpatterns = [
    path("checkout-sessions", views.PlatformSessionCollectionView.as_view(), name="platform-sessions"),
    path("checkout-sessions/<public_id:session_id>", views.PlatformSessionDetailView.as_view()),
    path("checkout-sessions/<public_id:session_id>/expire", views.PlatformSessionExpireView.as_view()),
]
