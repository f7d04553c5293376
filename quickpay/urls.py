from django.urls import path

from core.inputs import register_converters
from quickpay import views

register_converters()

urlpatterns = [
    path("quick-pay", views.QuickPayView.as_view(), name="quick-pay"),
    path("quick-pay/<public_id:payment_id>", views.QuickPaymentDetailView.as_view(), name="quick-pay-detail"),
]
