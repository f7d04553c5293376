"""The checkout's resources under /api/v1: payment links and their items, checkout sessions (`cs_`), the
transactions that paid them, discount codes, widgets and the analytics over them."""

from django.urls import path

from checkout import analytics, discount_api, test_helpers, views, widget_api
from checkout import link_views as links
from checkout import transaction_views as transactions
from core.inputs import register_converters

register_converters()

urlpatterns = [
    path("payment-links", links.PaymentLinkCollectionView.as_view(), name="payment-links"),
    path("payment-links/<public_id:link_id>", links.PaymentLinkDetailView.as_view(), name="payment-link"),
    path("payment-links/<public_id:link_id>/duplicate", links.PaymentLinkDuplicateView.as_view()),
    path("payment-links/<public_id:link_id>/sessions", links.PaymentLinkSessionsView.as_view()),
    path("payment-links/<public_id:link_id>/stats", links.PaymentLinkStatsView.as_view()),
    path("payment-links/<public_id:link_id>/visitors", links.PaymentLinkVisitorsView.as_view()),
    path("payment-links/<public_id:link_id>/items", links.PaymentLinkItemsView.as_view()),
    path(
        "payment-links/<public_id:link_id>/items/<public_id:item_id>",
        links.PaymentLinkItemDetailView.as_view(),
    ),
    path("products/<public_id:product_id>/generate-link", links.ProductGenerateLinkView.as_view()),
    path("checkout-sessions", views.PlatformSessionCollectionView.as_view(), name="platform-sessions"),
    path("checkout-sessions/<public_id:session_id>", views.PlatformSessionDetailView.as_view()),
    path("checkout-sessions/<public_id:session_id>/expire", views.PlatformSessionExpireView.as_view()),
    path("transactions", transactions.TransactionCollectionView.as_view(), name="transactions"),
    path("transactions/stats", transactions.TransactionStatsView.as_view(), name="transaction-stats"),
    path("transactions/export", transactions.TransactionExportView.as_view(), name="transaction-export"),
    path(
        "transactions/<public_id:transaction_id>",
        transactions.TransactionDetailView.as_view(),
        name="transaction",
    ),
    path("customers/<public_id:customer_id>/transactions", transactions.CustomerTransactionsView.as_view()),
    path("discount-codes", discount_api.DiscountCollectionView.as_view(), name="discount-codes"),
    path("discount-codes/validate", discount_api.DiscountValidateView.as_view(), name="discount-validate"),
    path("discount-codes/batch", discount_api.DiscountBatchView.as_view(), name="discount-batch"),
    path(
        "discount-codes/<public_id:code_id>", discount_api.DiscountDetailView.as_view(), name="discount-code"
    ),
    path("widgets", widget_api.WidgetCollectionView.as_view(), name="widgets"),
    path("widgets/<public_id:widget_id>", widget_api.WidgetDetailView.as_view(), name="widget"),
    path("widgets/<public_id:widget_id>/stats", widget_api.WidgetStatsView.as_view(), name="widget-stats"),
    path("analytics/overview", analytics.AnalyticsOverviewView.as_view(), name="analytics-overview"),
    path(
        "test-helpers/checkout-sessions/<public_id:session_id>/pay",
        test_helpers.TestSessionPayView.as_view(),
        name="test-helpers-session-pay",
    ),
]
