from django.urls import path

from core.inputs import register_converters
from refunds import test_helpers, views

register_converters()

urlpatterns = [
    path("refunds", views.RefundCollectionView.as_view(), name="refunds"),
    path("refunds/<public_id:refund_id>", views.RefundDetailView.as_view(), name="refund"),
    path("refunds/<public_id:refund_id>/cancel", views.RefundCancelView.as_view(), name="refund-cancel"),
    path("refund-balance", views.RefundBalanceView.as_view(), name="refund-balance"),
    path("refund-balance/top-ups", views.RefundTopUpView.as_view(), name="refund-balance-top-ups"),
    path(
        "test-helpers/refunds/<public_id:refund_id>/fund",
        test_helpers.TestRefundFundView.as_view(),
        name="test-helpers-refund-fund",
    ),
]
