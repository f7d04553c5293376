from django.urls import path

from core.inputs import register_converters
from orders import hosted, views, widget_page

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
    # The hosted checkout page of payment links and platform checkout sessions (HTML).
    path("pay/<public_id:short_code>", hosted.link_page, name="pay-link"),
    path("pay/s/<public_id:session_id>", hosted.session_page, name="pay-session"),
    path("pay/s/<public_id:session_id>/status", hosted.session_status, name="pay-status"),
    path("pay/s/<public_id:session_id>/devnet-pay", hosted.session_devnet_pay, name="pay-devnet"),
    # A widget's embeddable page (HTML, may be framed).
    path("widgets/<public_id:short_code>", widget_page.widget_page, name="widget-page"),
    path("chains/<str:chain_id>/tokens", views.ChainTokensView.as_view(), name="chain-tokens"),
]
