"""What an order's lifecycle means for the session it pays: every effect of paying a link, in one place.

Subscribed to the checkout's own orders (`Order.owner == "checkout"`) in
`CheckoutConfig.ready`, and run in the order's transaction:

    Locking         the session's row is locked before the order's (its expiry takes them in that order)
    Changed         (and RefundPaid) the hosted page's cached status is replaced (checkout.status_version)
    DepositCounted  the session's transaction shows what arrived (`pending`); paid in full, it is
                    `confirming` and the session `processing`
    Executed        transaction `completed`, session `completed`, the customer updated, revenue recorded,
                    the link's and the discount code's uses counted, the widget's completion;
                    `payment.completed` and `checkout.completed`
    Failed          (nothing was paid) or Refunded (it is back): transaction and session `failed`, the
                    discount hold released; `payment.failed`
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import F, Q
from django.dispatch import receiver
from django.utils import timezone

from checkout.balance import payment_refunded, payment_settled
from checkout.discounts import discount_redeem
from checkout.models import PaymentLink, SessionOrder, Transaction, WidgetEvent
from checkout.payloads import checkout_completed_data
from checkout.payments import OWNER
from checkout.receipts import RECEIPT_EMAIL, REFUND_EMAIL, payer_email_queue
from checkout.sessions import Session, release_discount_hold
from checkout.states import SESSION, TRANSACTION
from checkout.status_version import status_changed
from checkout.widgets import widget_event_record
from ledger.balance import balance_payment_refunded, balance_payment_settled
from merchant.api import customer_paid, revenue_record
from merchant.models import Customer
from merchant.signals import customer_erased
from orders import events
from orders.fees import fee_amount, token_usd_value
from orders.models import Order
from orders.selectors import payment_seen
from platform_api.signals import personal_data_erased
from webhooks.events import (
    EventType,
    Payment,
    PaymentOutcome,
    emit_event,
    emit_payment,
)


def _session_id(order: Order) -> str:
    return SessionOrder.objects.values_list("session_id", flat=True).get(order=order)


def _locked_session(order: Order) -> Session:
    return (
        Session.objects.select_for_update(of=("self",))
        .select_related("discount_code")
        .get(pk=_session_id(order))
    )


def _transaction_for(order: Order, session: Session) -> Transaction:
    fee = fee_amount(int(order.src_amount), int((order.fee or {}).get("finalFeeBps") or 0))
    row, _ = Transaction.objects.get_or_create(
        order_id=order.pk,
        defaults={
            "organization_id": session.organization_id,
            "session": session,
            "payment_link_id": session.payment_link_id,
            "chain_id": session.chain_id,
            "to_address": session.recipient_address,
            "token_address": session.token_address,
            "amount": int((order.payload or {}).get("expectedDstAmount") or 0),
            "source_chain_id": order.src_chain,
            "source_token_address": order.src_token_address,
            "source_amount": int(order.src_amount),
            "fee_amount": fee,
            "form_data": session.form_data,
            "shipping_address": session.shipping_address,
            "metadata": session.metadata,
        },
    )
    return row


def transaction_payment(row: Transaction, session: Session) -> Payment:
    """A session's payment as merchants are told of it (`payment.completed`'s one shape)."""
    return Payment(
        id=row.id,
        amount=int(row.amount),
        token_address=row.token_address,
        chain_id=row.chain_id,
        recipient_address=row.to_address,
        status=row.status,
        created_at=row.created_at,
        completed_at=row.completed_at,
        sender_address=row.from_address,
        tx_hash=row.tx_hash,
        payment_link_id=row.payment_link_id,
        order_id=str(row.order_id),
        form_data=row.form_data if isinstance(row.form_data, dict) else {},
        discount_code=session.discount_code.code if session.discount_code else None,
        session_id=session.id,
        client_reference_id=session.client_reference_id,
        metadata=session.metadata,
        customer_email=session.customer_email,
        customer_name=session.customer_name,
    )


@events.on(events.Locking, owner=OWNER)
def on_locking(event: events.Locking) -> None:
    Session.objects.select_for_update().filter(pk=_session_id(event.order)).first()


@events.on(events.DepositCounted, owner=OWNER)
def on_deposit_counted(event: events.DepositCounted) -> None:
    """The transaction shows what arrived so far, and what of it goes back (beyond the price)."""
    order, deposit = event.order, event.deposit
    session = Session.objects.get(pk=_session_id(order))
    row = _transaction_for(order, session)
    now = timezone.now()
    fields: dict[str, Any] = {
        "updated_at": now,
        "source_amount": event.received,
        "refunded_amount": event.surplus,
    }
    if not row.tx_hash:
        fields |= {"tx_hash": deposit.tx_hash, "from_address": deposit.from_address or ""}
    if event.received >= int(order.src_amount):
        fields["status"] = Transaction.Status.CONFIRMING
        SESSION.move(
            Session.objects.filter(pk=session.pk),
            from_=(Session.Status.OPEN,),
            to=Session.Status.PROCESSING,
            payer_address=deposit.from_address or "",
            tx_hash=row.tx_hash or deposit.tx_hash,
            updated_at=now,
        )
    TRANSACTION.move(
        Transaction.objects.filter(pk=row.pk),
        from_=(Transaction.Status.PENDING,),
        to=fields.pop("status", Transaction.Status.PENDING),
        **fields,
    )


def _customer_paid(session: Session, row: Transaction, usd: Decimal, now) -> Customer | None:
    """The payer's customer (by wallet) gains this payment; a first payment creates it."""
    form_email = session.form_data.get("email") if isinstance(session.form_data, dict) else None
    email = session.customer_email or (form_email if isinstance(form_email, str) else "")
    return customer_paid(
        organization_id=row.organization_id,
        wallet=row.from_address,
        name=session.customer_name,
        email=email,
        usd=usd,
        now=now,
    )


def _session_completed(session: Session) -> None:
    """The session's uses are counted: the link's, the discount code's (its hold redeemed), the widget's."""
    if session.payment_link_id:
        PaymentLink.objects.filter(pk=session.payment_link_id).update(current_uses=F("current_uses") + 1)
    if session.discount_reserved and session.discount_code_id:
        Session.objects.filter(pk=session.pk).update(discount_reserved=False)
        discount_redeem(session.discount_code_id)
    if session.widget_id:
        widget_event_record(session.widget_id, WidgetEvent.Kind.COMPLETION, session.id)


@events.on(events.Executed, owner=OWNER)
def on_executed(event: events.Executed) -> None:
    """The merchant was paid: complete the session and its transaction, count the uses, tell the merchant."""
    order = event.order
    session = _locked_session(order)
    row = _transaction_for(order, session)
    if not row.tx_hash:  # executed on first sight of the payment: its deposit is counted later
        sender, tx_hash = payment_seen(order)
        if tx_hash:
            Transaction.objects.filter(pk=row.pk, tx_hash="").update(
                tx_hash=tx_hash, from_address=sender or ""
            )
            row.refresh_from_db()
    now = timezone.now()
    settled = order.settlement or {}
    delivered = int(settled.get("actualDstAmount") or settled.get("dstAmount") or 0)
    usd = token_usd_value(chain_id=row.chain_id, address=row.token_address, amount=delivered)
    usd = usd.quantize(Decimal("0.01"))
    customer = _customer_paid(session, row, usd, now)
    if TRANSACTION.move(
        Transaction.objects.filter(pk=row.pk),
        to=Transaction.Status.COMPLETED,
        amount=delivered,
        amount_usd=usd,
        completed_at=now,
        updated_at=now,
        customer=customer,
    ):
        row.refresh_from_db()
        balance_payment_settled(payment_settled(order, row))
        revenue_record(
            organization_id=row.organization_id,
            completed_at=now,
            payment_link_id=row.payment_link_id,
            chain_id=row.chain_id,
            token_address=row.token_address,
            amount_usd=usd,
        )
    if SESSION.move(
        Session.objects.filter(pk=session.pk),
        from_=(Session.Status.OPEN, Session.Status.PROCESSING),
        to=Session.Status.COMPLETED,
        completed_at=now,
        updated_at=now,
        customer=customer,
        payer_address=row.from_address,
        tx_hash=row.tx_hash,
    ):
        _session_completed(session)
        completed_now = True
    else:
        completed_now = False
    session.refresh_from_db()
    row.refresh_from_db()
    payment = transaction_payment(row, session)
    emit_payment(
        organization=session.organization,
        outcome=PaymentOutcome.DELIVERED,
        payment=payment,
        subject=session.id,
    )
    completed_event = emit_event(
        organization=session.organization,
        event_type=EventType.CHECKOUT_COMPLETED,
        subject=session.id,
        data=checkout_completed_data(session, payment),
    )
    if completed_now:
        payer_email_queue(session=session, order=order, event=completed_event, kind=RECEIPT_EMAIL)


def _payment_failed(order: Order, *, error: str, refund_tx_hash: str | None, outcome: PaymentOutcome) -> None:
    """The payment failed (and what came is back): the session fails, its transaction too; `payment.failed`."""
    session = _locked_session(order)
    row = _transaction_for(order, session)
    now = timezone.now()
    TRANSACTION.move(Transaction.objects.filter(pk=row.pk), to=Transaction.Status.FAILED, updated_at=now)
    failed_now = SESSION.move(
        Session.objects.filter(pk=session.pk),
        from_=(Session.Status.PROCESSING,),
        to=Session.Status.FAILED,
        updated_at=now,
    )
    if failed_now:
        release_discount_hold(session)
    session.refresh_from_db()
    row.refresh_from_db()
    failed_event = emit_payment(
        organization=session.organization,
        outcome=outcome,
        payment=transaction_payment(row, session),
        error=error,
        refund_tx_hash=refund_tx_hash,
        subject=session.id,
    )
    if failed_now and refund_tx_hash:  # the payer sent something and it is back: tell them where
        payer_email_queue(session=session, order=order, event=failed_event, kind=REFUND_EMAIL)


@events.on(events.Failed, owner=OWNER)
def on_failed(event: events.Failed) -> None:
    if not event.refunding:  # nothing was paid; otherwise `Refunded` tells once it is back
        _payment_failed(event.order, error=event.error, refund_tx_hash=None, outcome=PaymentOutcome.UNPAID)


@events.on(events.Refunded, owner=OWNER)
def on_refunded(event: events.Refunded) -> None:
    _payment_failed(
        event.order, error=event.error, refund_tx_hash=event.refund_tx_hash, outcome=PaymentOutcome.REFUNDED
    )


@events.on(events.RefundPaid, owner=OWNER)
def on_refund_paid(event: events.RefundPaid) -> None:
    """Money went back to the session's payer: a balance transaction of the merchant (net 0)."""
    session = Session.objects.get(pk=_session_id(event.order))
    balance_payment_refunded(
        payment_refunded(event.order, _transaction_for(event.order, session), event.refund)
    )


@events.on(events.Changed, events.RefundPaid, owner=OWNER)
def on_changed(event: events.Changed | events.RefundPaid) -> None:
    """The hosted page's poll shows something new: its cached version goes once this commits."""
    status_changed(_session_id(event.order))


@receiver(customer_erased, dispatch_uid="checkout.customer_erased")
def on_customer_erased(sender, *, customer: Customer, **_) -> None:
    """`merchant.signals.customer_erased`: the email, name, form answers and shipping address of every
    session and transaction of the customer (or of its wallet) go too; then the webhooks' copies."""
    sessions = Session.objects.filter(organization_id=customer.organization_id).filter(
        Q(customer=customer) | Q(payer_address__iexact=customer.wallet_address)
    )
    session_ids = list(sessions.values_list("pk", flat=True))
    sessions.update(customer_email="", customer_name="", form_data={}, shipping_address=None)
    Transaction.objects.filter(organization_id=customer.organization_id).filter(
        Q(customer=customer) | Q(from_address__iexact=customer.wallet_address) | Q(session_id__in=session_ids)
    ).update(form_data={}, shipping_address=None)
    personal_data_erased.send(sender=Customer, organization=customer.organization, session_ids=session_ids)
