from django.urls import path

from core.inputs import register_converters
from orders import views

register_converters()

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
    path("orders/quote", views.OrderQuoteView.as_view(), name="order-quote"),
    path("orders", views.OrderCollectionView.as_view(), name="orders"),
    path("orders/<str:order_id>", views.OrderDetailView.as_view(), name="order"),
    path(
        "orders/<str:order_id>/comprehensive",
        views.OrderComprehensiveView.as_view(),
        name="order-comprehensive",
    ),
    path("chains", views.ChainListView.as_view(), name="chains"),
    path("chains/<str:chain_id>/tokens", views.ChainTokensView.as_view(), name="chain-tokens"),
]
