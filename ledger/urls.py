"""The merchant's balance under /api/v1: its balance transactions, their export and one by id."""

from django.urls import path

from core.inputs import register_converters
from ledger import balance_api

register_converters()

urlpatterns = [
    path(
        "balance-transactions",
        balance_api.BalanceTransactionCollectionView.as_view(),
        name="balance-transactions",
    ),
    path("balance-transactions/export", balance_api.BalanceTransactionExportView.as_view()),
    path(
        "balance-transactions/<public_id:balance_transaction_id>",
        balance_api.BalanceTransactionDetailView.as_view(),
    ),
]
