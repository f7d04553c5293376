from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_events_purge
from audit.tasks import purge_expired_audit_events
from tests.factories import AuditEventFactory

pytestmark = pytest.mark.django_db


def _events(ages_in_days):
    now = timezone.now()
    return [AuditEventFactory(created_at=now - timedelta(days=d)) for d in ages_in_days]


def test_purge_deletes_events_older_than_90_days_in_batches():
    kept = _events([0, 89])
    _events([91, 100, 365, 400, 500])

    assert audit_events_purge(batch_size=2) == 5

    assert set(AuditEvent.objects.values_list("pk", flat=True)) == {e.pk for e in kept}


def test_periodic_task_purges():
    _events([120])
    assert purge_expired_audit_events() == 1
    assert not AuditEvent.objects.exists()


def test_management_command_purges_and_reports(capsys):
    _events([1, 91, 92])
    call_command("purge_audit_events", "--batch-size", "1")
    assert "Deleted 2 audit events older than 90 days." in capsys.readouterr().out
    assert AuditEvent.objects.count() == 1


def test_beat_schedules_the_purge():
    from django.conf import settings

    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "audit.tasks.purge_expired_audit_events" in tasks
