from django.urls import path

from core.inputs import register_converters
from orders import platform_views

register_converters()

urlpatterns = [
    path(
        "checkout-sessions", platform_views.PlatformSessionCollectionView.as_view(), name="platform-sessions"
    ),
    path("checkout-sessions/<public_id:session_id>", platform_views.PlatformSessionDetailView.as_view()),
    path(
        "checkout-sessions/<public_id:session_id>/expire", platform_views.PlatformSessionExpireView.as_view()
    ),
]
