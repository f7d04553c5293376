"""The order interface's checkout sessions (its envelope; mounted at the root beside `orders.urls`)."""

from django.urls import path

from checkout import interface_views as views

urlpatterns = [
    path("checkout-sessions", views.CheckoutSessionCreateView.as_view(), name="checkout-sessions"),
    path(
        "checkout-sessions/<str:session_id>",
        views.CheckoutSessionDetailView.as_view(),
        name="checkout-session",
    ),
    path(
        "checkout-sessions/<str:session_id>/expire",
        views.CheckoutSessionExpireView.as_view(),
        name="checkout-session-expire",
    ),
]
