"""The refunds on a payment's page: their rows, the refund form and what may still be refunded. Shared by the
payment page (dashboard.pages) and the refund views that show it again with a refused form
(dashboard.refund_pages), so neither imports the other back."""

from __future__ import annotations

from django.http import HttpRequest

from checkout.display import (
    display_token,
    format_units,
)
from checkout.models import Transaction
from dashboard.amounts import token_amount
from dashboard.forms import ApiForm
from dashboard.once import new_form_token
from refunds import services
from refunds.models import Refund
from refunds.serializers import RefundCreateSerializer

REASONS = [
    ("requested_by_customer", "Requested by the customer"),
    ("duplicate", "A duplicate payment"),
    ("fraudulent", "Fraudulent"),
    ("other", "Another reason"),
]


class RefundForm(ApiForm):
    FIELDS = ("amount", "reason", "address")

    def body(self, txn: Transaction) -> dict | None:
        token = display_token(txn.chain_id, txn.token_address)
        amount = self.units("amount", token) if self.text("amount") else None
        body: dict = {"transaction": txn.id, "reason": self.text("reason") or "requested_by_customer"}
        if amount is not None:
            body["amount"] = str(amount)
        if self.text("address"):  # another address, on the chain and in the token the merchant was paid in
            body["destination"] = {
                "chain_id": txn.chain_id,
                "token_address": txn.token_address,
                "address": self.text("address"),
            }
        if self.errors:
            return None
        return self.checked(RefundCreateSerializer, body)

    def refuse(self, field: str | None, message: str) -> None:
        super().refuse("address" if field == "destination" else field, message)


def refund_rows(refunds) -> list[dict]:
    return [
        {
            "id": refund.id,
            "status": refund.status,
            "amount": token_amount(refund.chain_id, refund.token_address, refund.amount),
            "payment": refund.payment_id,
            "to": refund.destination_address,
            "created_at": refund.created_at,
        }
        for refund in refunds
    ]


def payment_refunds(request: HttpRequest, txn: Transaction, form: RefundForm | None = None) -> dict:
    """What the payment page shows of its refunds, and the refund form when the member may refund."""
    payment_id = txn.quick_payment_id or txn.id  # a quick payment's refunds are recorded under its own id
    refunds = Refund.objects.filter(organization=request.organization, payment_id=payment_id).order_by(  # type: ignore[attr-defined]
        "-created_at"
    )
    token = display_token(txn.chain_id, txn.token_address)
    left = int(txn.amount) - services.refund_held(payment_id)
    return {
        "form_token": new_form_token(),
        "refunds": refund_rows(refunds),
        "refundable": txn.status == Transaction.Status.COMPLETED and left > 0,
        "refund_left": f"{format_units(left, token.decimals)} {token.symbol}" if token else f"{left} units",
        "refund_form": form or RefundForm(),
        "reasons": REASONS,
    }
