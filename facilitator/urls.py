from django.urls import path

from facilitator import views

urlpatterns = [
    path("supported", views.supported, name="x402-supported"),
    path("verify", views.VerifyView.as_view(), name="x402-verify"),
    path("settle", views.SettleView.as_view(), name="x402-settle"),
    path("pay/<str:short_code>", views.pay_link, name="x402-pay-link"),
    path(
        "checkout/<str:session_id>/authorization",
        views.checkout_authorization,
        name="x402-checkout-authorization",
    ),
]
