from django.urls import path

from core.inputs import register_converters
from platform_api import views

register_converters()

urlpatterns = [
    path("api-keys", views.ApiKeyCollectionView.as_view(), name="api-keys"),
    path("api-keys/<public_id:key_id>", views.ApiKeyDetailView.as_view(), name="api-key-detail"),
    path("quick-pay", views.QuickPayView.as_view(), name="quick-pay"),
    path("quick-pay/<public_id:payment_id>", views.QuickPaymentDetailView.as_view(), name="quick-pay-detail"),
]
