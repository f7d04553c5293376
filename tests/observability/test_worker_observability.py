"""A real Celery worker with LOG_FORMAT=json and METRICS_DIR: the request's id reaches the task's log lines,
and the worker's counts reach `/metrics` through the shared directory."""

from __future__ import annotations

import json
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families
from werkzeug import Response

from tests.conftest import client_for, wait_for
from tests.factories import make_api_key
from tests.webhooks.conftest import make_endpoint
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_requests_id_and_the_workers_counts_follow_its_task(
    start_worker, organization, httpserver, tmp_path, settings, client
):
    make_endpoint(organization, httpserver.url_for("/hook"), events=["checkout.expired"])
    httpserver.expect_request("/hook", method="POST").respond_with_response(Response("ok"))
    metrics_dir = tmp_path / "metrics"
    worker = start_worker(LOG_FORMAT="json", METRICS_DIR=str(metrics_dir), METRICS_ROLE="webhooks-1")
    _, raw = make_api_key(organization, permissions=["write"])
    api = client_for(raw)
    session_id = api.post("/checkout-sessions", {}, format="json").json()["data"]["id"]

    expired = api.post(f"/checkout-sessions/{session_id}/expire", HTTP_X_REQUEST_ID="it-expire-7")
    assert expired.status_code == 200 and expired["X-Request-ID"] == "it-expire-7"
    wait_for(lambda: WebhookDelivery.objects.filter(status="success").exists())

    # The worker's samples, summed from its directory by this process's /metrics.
    settings.METRICS_DIR = str(metrics_dir)
    import os

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir / "main")
    try:
        text = client.get("/metrics").content.decode()
    finally:
        del os.environ["PROMETHEUS_MULTIPROC_DIR"]
    success = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "checkout_webhook_attempts_total" and sample.labels == {"outcome": "success"}
    ]
    assert success == [1.0]

    lines = worker.log_path.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert records and all({"time", "level", "logger", "message"} <= set(record) for record in records)
    delivered = [record for record in records if record["logger"] == "webhooks.delivery"]
    assert delivered, lines[-20:]
    assert delivered[0]["request_id"] == "it-expire-7"
    assert delivered[0]["task_id"] and "HTTP 200" in delivered[0]["message"]
    # Every log record is a JSON line (what else the worker prints is its start-up banner).
    assert not [line for line in lines if re.match(r"\[?\d{4}-\d\d-\d\d[ T]", line)]
    assert raw not in "\n".join(lines)  # the API key never appears
