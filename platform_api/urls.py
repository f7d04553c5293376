from django.urls import path

from core.inputs import register_converters
from platform_api import analytics, catalog_api, customer_api, discount_api, views, widget_api
from platform_api import merchant_views as merchant

register_converters()

urlpatterns = [
    path("api-keys", views.ApiKeyCollectionView.as_view(), name="api-keys"),
    path("api-keys/<public_id:key_id>", views.ApiKeyDetailView.as_view(), name="api-key-detail"),
    path("payment-links", merchant.PaymentLinkCollectionView.as_view(), name="payment-links"),
    path("payment-links/<public_id:link_id>", merchant.PaymentLinkDetailView.as_view(), name="payment-link"),
    path("payment-links/<public_id:link_id>/duplicate", merchant.PaymentLinkDuplicateView.as_view()),
    path("payment-links/<public_id:link_id>/sessions", merchant.PaymentLinkSessionsView.as_view()),
    path("payment-links/<public_id:link_id>/stats", merchant.PaymentLinkStatsView.as_view()),
    path("payment-links/<public_id:link_id>/visitors", merchant.PaymentLinkVisitorsView.as_view()),
    path("payment-links/<public_id:link_id>/items", merchant.PaymentLinkItemsView.as_view()),
    path(
        "payment-links/<public_id:link_id>/items/<public_id:item_id>",
        merchant.PaymentLinkItemDetailView.as_view(),
    ),
    path("transactions", merchant.TransactionCollectionView.as_view(), name="transactions"),
    path("transactions/stats", merchant.TransactionStatsView.as_view(), name="transaction-stats"),
    path("transactions/export", customer_api.TransactionExportView.as_view(), name="transaction-export"),
    path(
        "transactions/<public_id:transaction_id>",
        merchant.TransactionDetailView.as_view(),
        name="transaction",
    ),
    path("discount-codes", discount_api.DiscountCollectionView.as_view(), name="discount-codes"),
    path("discount-codes/validate", discount_api.DiscountValidateView.as_view(), name="discount-validate"),
    path("discount-codes/batch", discount_api.DiscountBatchView.as_view(), name="discount-batch"),
    path(
        "discount-codes/<public_id:code_id>", discount_api.DiscountDetailView.as_view(), name="discount-code"
    ),
    path("products", catalog_api.ProductCollectionView.as_view(), name="products"),
    path("products/<public_id:product_id>", catalog_api.ProductDetailView.as_view(), name="product"),
    path("products/<public_id:product_id>/generate-link", catalog_api.ProductGenerateLinkView.as_view()),
    path("widgets", widget_api.WidgetCollectionView.as_view(), name="widgets"),
    path("widgets/<public_id:widget_id>", widget_api.WidgetDetailView.as_view(), name="widget"),
    path("widgets/<public_id:widget_id>/stats", widget_api.WidgetStatsView.as_view(), name="widget-stats"),
    path("analytics/overview", analytics.AnalyticsOverviewView.as_view(), name="analytics-overview"),
    path("organization", catalog_api.OrganizationView.as_view(), name="organization"),
    path("customers", customer_api.CustomerCollectionView.as_view(), name="customers"),
    path("customers/export", customer_api.CustomerExportView.as_view(), name="customer-export"),
    path("customers/<public_id:customer_id>", customer_api.CustomerDetailView.as_view(), name="customer"),
    path("customers/<public_id:customer_id>/transactions", customer_api.CustomerTransactionsView.as_view()),
]
