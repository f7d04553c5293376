from django.urls import path

from onramp import views

urlpatterns = [
    path("onramp/vendorA/onramp-url", views.VendorAOnrampUrlView.as_view(), name="vendor-a-onramp-url"),
    path("onramp/vendorA/direct-url", views.VendorADirectUrlView.as_view(), name="vendor-a-direct-url"),
    path(
        "onramp/vendorA/session-token", views.VendorASessionTokenView.as_view(), name="vendor-a-session-token"
    ),
    path("onramp/vendorA/options", views.VendorAOptionsView.as_view(), name="vendor-a-options"),
    path("onramp/vendorB/supported", views.VendorBSupportedView.as_view(), name="vendor-b-supported"),
    path("onramp/vendorB/webhook", views.VendorBWebhookView.as_view(), name="vendor-b-webhook"),
]
