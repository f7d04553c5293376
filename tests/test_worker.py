"""Background work runs on a real Celery worker process, not in eager mode."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.tasks import purge_expired_audit_events
from quickpay.models import QuickPayment
from quickpay.tasks import expire_quick_payments
from tests.conftest import wait_for
from tests.factories import AuditEventFactory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_worker_purges_expired_audit_events(celery_worker):
    now = timezone.now()
    kept = AuditEventFactory(created_at=now - timedelta(days=10))
    AuditEventFactory(created_at=now - timedelta(days=200))

    purge_expired_audit_events.apply_async(queue=celery_worker)

    wait_for(lambda: AuditEvent.objects.count() == 1)
    assert AuditEvent.objects.get().pk == kept.pk


def test_worker_expires_quick_payments(celery_worker):
    payment = QuickPayment.objects.create(
        amount=1,
        token_address="0x" + "1" * 40,
        chain_id=1,
        recipient_address="0x" + "2" * 40,
        deposit_address="0x" + "3" * 40,
        expires_at=timezone.now() - timedelta(seconds=1),
    )

    expire_quick_payments.apply_async(queue=celery_worker)

    wait_for(lambda: QuickPayment.objects.filter(pk=payment.pk, status="expired").exists())
    payment.refresh_from_db()
    assert payment.status == "expired"


def test_a_worker_that_starts_drives_the_settlements_a_killed_worker_left(api_client, tokens, start_worker):
    """Found under load: after a kill -9 of a worker's main process, 2 of 10 orders waited 296 s for the
    stuck-order sweep. Their tasks died with the worker; the next worker now picks their orders up at once."""
    import time

    from orders.lifecycle import order_record_deposit
    from orders.models import Order
    from tests.orders.conftest import order_body

    orders = []
    for n in range(3):
        created = api_client.post("/orders", order_body(), format="json").json()["data"]
        order = Order.objects.get(pk=created["id"])
        order_record_deposit(
            order=order,
            chain=8453,
            tx_hash="0x" + f"{n + 1:064x}",
            amount=100_000_000,
            from_address="0x" + "4" * 40,
        )
        orders.append(order.pk)
    # Their settlement tasks were lost (nothing was sent to any queue here), and they are far from "stuck".
    assert set(Order.objects.filter(pk__in=orders).values_list("status", flat=True)) == {
        "quoting_after_deposit"
    }

    started = time.monotonic()
    start_worker()

    wait_for(
        lambda: not Order.objects.filter(pk__in=orders, status="quoting_after_deposit").exists(), timeout=30
    )
    assert time.monotonic() - started < 30
    for order in Order.objects.filter(pk__in=orders):
        # Base has no devnet solver: the settlement fails the order and starts its refund, as it would have.
        assert order.status_changes.filter(from_status="quoting_after_deposit", actor="system").exists()
