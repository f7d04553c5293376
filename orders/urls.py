from django.urls import path

from core.inputs import register_converters
from orders import views

register_converters()

urlpatterns = [
    path("orders/quote", views.OrderQuoteView.as_view(), name="order-quote"),
    path("orders", views.OrderCollectionView.as_view(), name="orders"),
    path("orders/<str:order_id>", views.OrderDetailView.as_view(), name="order"),
    path(
        "orders/<str:order_id>/comprehensive",
        views.OrderComprehensiveView.as_view(),
        name="order-comprehensive",
    ),
    path("relay/webhook", views.RelayWebhookView.as_view(), name="relay-webhook"),
    path("chains", views.ChainListView.as_view(), name="chains"),
    path("chains/<str:chain_id>/tokens", views.ChainTokensView.as_view(), name="chain-tokens"),
]
