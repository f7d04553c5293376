"""An organization's quick payments in its books: each one it received is a transaction (`/transactions`, its
export, analytics, the dashboard), as a checkout session's payment is.

Kept by `quickpay.signals.quick_payment_progressed`, in the transaction that records the progress:

    received    the row shows what arrived (`pending`); paid in full, `confirming`
    delivered   the payout to the recipient was mined: `completed`, the customer (by wallet) and the revenue
                rollup gain it, once
    returned    it expired unpaid and what it counted is back: `failed`

A quick payment has no order and no fee: the payer paid its own address on its chain, in its token, and the
recipient is paid that amount there. Its balance rows are quick pay's (`quickpay.handlers`).
"""

from __future__ import annotations

from decimal import Decimal

from django.dispatch import receiver
from django.utils import timezone

from checkout.models import Transaction
from checkout.states import TRANSACTION
from merchant.api import customer_paid, revenue_record
from orders.fees import token_usd_value
from quickpay.models import QuickPayment
from quickpay.signals import Progress, quick_payment_progressed

Status = Transaction.Status


def _row_for(payment: QuickPayment) -> Transaction:
    row, _ = Transaction.objects.get_or_create(
        quick_payment_id=payment.id,
        defaults={
            "organization_id": payment.organization_id,
            "chain_id": payment.chain_id,
            "to_address": payment.recipient_address,
            "token_address": payment.token_address,
            "amount": int(payment.amount),
            "source_chain_id": payment.chain_id,
            "source_token_address": payment.token_address,
            "source_amount": 0,
        },
    )
    return row


def _received(payment: QuickPayment, row: Transaction) -> None:
    paid = payment.status == QuickPayment.Status.PAID
    fields = {
        "source_amount": int(payment.amount_received),
        "from_address": payment.payer_address,
        "tx_hash": payment.tx_hash or row.tx_hash,
        "updated_at": timezone.now(),
    }
    TRANSACTION.move(
        Transaction.objects.filter(pk=row.pk),
        from_=(Status.PENDING,),
        to=Status.CONFIRMING if paid else Status.PENDING,
        **fields,
    )


def _delivered(payment: QuickPayment, row: Transaction) -> None:
    now = timezone.now()
    amount = int(payment.amount)
    usd = token_usd_value(chain_id=payment.chain_id, address=payment.token_address, amount=amount)
    usd = usd.quantize(Decimal("0.01"))
    if not TRANSACTION.move(
        Transaction.objects.filter(pk=row.pk),
        to=Status.COMPLETED,
        amount=amount,
        amount_usd=usd,
        source_amount=int(payment.amount_received),
        from_address=payment.payer_address,
        tx_hash=payment.tx_hash or row.tx_hash,
        completed_at=now,
        updated_at=now,
    ):
        return  # completed before (a retried handler)
    customer = customer_paid(
        organization_id=row.organization_id, wallet=payment.payer_address, name="", email="", usd=usd, now=now
    )
    if customer is not None:
        Transaction.objects.filter(pk=row.pk).update(customer=customer)
    revenue_record(
        organization_id=row.organization_id,
        completed_at=now,
        payment_link_id=None,
        chain_id=row.chain_id,
        token_address=row.token_address,
        amount_usd=usd,
    )


@receiver(quick_payment_progressed, dispatch_uid="checkout.quick_payment_progressed")
def on_quick_payment_progressed(sender, *, payment: QuickPayment, progress: Progress, **_) -> None:
    if payment.organization_id is None:
        return
    row = _row_for(payment)
    if progress is Progress.RECEIVED:
        _received(payment, row)
    elif progress is Progress.DELIVERED:
        _delivered(payment, row)
    elif progress is Progress.RETURNED:
        TRANSACTION.move(Transaction.objects.filter(pk=row.pk), to=Status.FAILED, updated_at=timezone.now())
