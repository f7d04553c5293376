"""Background work runs on a real Celery worker process, not in eager mode."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.tasks import purge_expired_audit_events
from platform_api.models import QuickPayment
from platform_api.tasks import expire_quick_payments
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
