"""Webhooks in the dashboard against a real local receiver: the log says why deliveries failed, and a
developer retries one, sends a test, re-enables the endpoint and rotates its secret; a viewer cannot."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from tests.dashboard.conftest import make_member, signed_in
from tests.factories import OrganizationFactory
from tests.webhooks.conftest import make_endpoint
from webhooks.events import delivery_body
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


def _failed(endpoint) -> WebhookDelivery:
    now = timezone.now()
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_type="payment.completed",
        status="failed",
        attempts=4,
        response_code=500,
        last_error="HTTP 500",
        created_at=now,
        body=delivery_body(
            event_type="payment.completed",
            endpoint_id=endpoint.id,
            timestamp=now.isoformat(),
            data={"id": "txn_1"},
            livemode=True,
        ),
    )
    WebhookAttempt.objects.create(
        delivery=delivery, number=4, response_code=500, response_time_ms=12, error="HTTP 500"
    )
    return delivery


def test_a_developer_finds_the_failed_delivery_and_sends_it_again(organization, httpserver):
    httpserver.expect_request("/hooks").respond_with_data("ok")
    endpoint, _ = make_endpoint(organization, httpserver.url_for("/hooks"))
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        is_active=False, disabled_reason="failed 10 times in a row"
    )
    delivery = _failed(endpoint)
    developer = make_member(organization, "dev@shop.example", "developer")
    browser = signed_in(developer)

    listed = browser.get("/dashboard/webhooks/").content.decode()
    assert "failed 10 times in a row" in listed
    page = browser.get(f"/dashboard/webhooks/{endpoint.id}?status=failed").content.decode()
    assert "HTTP 500" in page and "txn_1" in page and "Retry this delivery" in page

    assert browser.post(f"/dashboard/webhooks/{endpoint.id}/enable").status_code == 302
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_active
    browser.post(f"/dashboard/webhooks/{endpoint.id}/retry", {"delivery": delivery.id})
    delivery.refresh_from_db()
    assert delivery.status == "success"
    sent = json.loads(httpserver.log[-1][0].get_data())
    assert sent["event"] == "payment.completed" and sent["data"]["id"] == "txn_1"
    after = browser.get(f"/dashboard/webhooks/{endpoint.id}").content.decode()
    assert f"Retried {delivery.id}: delivered (200)." in after

    browser.post(f"/dashboard/webhooks/{endpoint.id}/test")
    assert json.loads(httpserver.log[-1][0].get_data())["event"] == "test.ping"
    rotated = browser.post(f"/dashboard/webhooks/{endpoint.id}/rotate", follow=True).content.decode()
    assert 'id="new-secret">whsec_' in rotated
    assert 'id="new-secret"' not in browser.get(f"/dashboard/webhooks/{endpoint.id}").content.decode()  # once


def test_send_again_everything_that_failed_since_a_time(organization, httpserver):
    endpoint, _ = make_endpoint(organization, httpserver.url_for("/hooks"))
    old, recent = _failed(endpoint), _failed(endpoint)
    WebhookDelivery.objects.filter(pk=old.pk).update(created_at=timezone.now() - timezone.timedelta(days=3))
    browser = signed_in(make_member(organization, "dev@shop.example", "developer"))
    since = (timezone.now() - timezone.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    done = browser.post(f"/dashboard/webhooks/{endpoint.id}/resend-failed", {"since": since}, follow=True)
    assert "1 failed delivery will be sent again." in done.content.decode()
    assert WebhookDelivery.objects.get(pk=recent.pk).status == "pending"
    assert WebhookDelivery.objects.get(pk=old.pk).status == "failed"
    bad = browser.post(
        f"/dashboard/webhooks/{endpoint.id}/resend-failed", {"since": "yesterday"}, follow=True
    )
    assert "Enter the date and time" in bad.content.decode()


def test_a_viewer_reads_the_log_but_changes_nothing_and_others_endpoints_are_not_found(
    organization, httpserver
):
    endpoint, _ = make_endpoint(organization, httpserver.url_for("/hooks"))
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(is_active=False)
    delivery = _failed(endpoint)
    theirs, _ = make_endpoint(OrganizationFactory(slug="other"), httpserver.url_for("/theirs"))
    browser = signed_in(make_member(organization))
    page = browser.get(f"/dashboard/webhooks/{endpoint.id}").content.decode()
    assert "HTTP 500" in page and "Retry this delivery" not in page and "Rotate" not in page
    for action in ("enable", "test", "rotate", "retry", "resend-failed"):
        assert (
            browser.post(f"/dashboard/webhooks/{endpoint.id}/{action}", {"delivery": delivery.id}).status_code
            == 403
        )
    assert not WebhookEndpoint.objects.get(pk=endpoint.pk).is_active
    assert WebhookDelivery.objects.get(pk=delivery.pk).status == "failed" and not httpserver.log
    assert browser.get(f"/dashboard/webhooks/{theirs.id}").status_code == 404
    admin = signed_in(make_member(organization, "admin@shop.example", "admin"))
    assert admin.post(f"/dashboard/webhooks/{theirs.id}/enable").status_code == 404
