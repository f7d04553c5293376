"""The webhooks guide's receiver (docs/guides/webhooks-and-cli.md), run as written, takes real deliveries, after a secret rotation too (issue 64, item
13): it checked only the new secret although both sign for 24 hours, so a receiver still holding the old one
refused every delivery."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.test_server_errors import _free_port
from webhooks.delivery import attempt_delivery
from webhooks.events import emit_event
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "webhooks-and-cli.md"


def _receiver_code(port: int) -> str:
    block = next(
        b for b in re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S) if "class Receiver" in b
    )
    assert '("127.0.0.1", 4242)' in block  # the port the guide's endpoint names, not PORT=9000's
    return block.replace('("127.0.0.1", 4242)', f'("127.0.0.1", {port})')


@pytest.fixture
def guide_receiver():
    """`start(secret)`: the guide's receiver in a process of its own, on a free port; its URL."""
    started = []

    def start(secret: str) -> str:
        port = _free_port()
        process = subprocess.Popen(
            [sys.executable, "-c", _receiver_code(port)],
            env={**os.environ, "WEBHOOK_SECRET": secret},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(process)
        url = f"http://127.0.0.1:{port}/webhooks"
        for _ in range(100):
            try:
                requests.get(url, timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        return url

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=10)


def _delivered(organization, endpoint_id) -> str:
    event = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_readme"})
    delivery = WebhookDelivery.objects.get(event=event, endpoint_id=endpoint_id)
    attempt_delivery(delivery.id)
    delivery.refresh_from_db()
    return delivery.status


@pytest.mark.parametrize("holds", ["the old secret", "both secrets"])
def test_the_guide_receiver_takes_deliveries_before_and_after_a_rotation(
    organization, admin_client, guide_receiver, holds
):
    created = admin_client.post(
        "/api/v1/webhooks", {"url": "http://127.0.0.1:9/webhooks", "events": ["*"]}, format="json"
    ).json()["data"]
    old = created["secret"]
    url = guide_receiver(old)
    admin_client.patch(f"/api/v1/webhooks/{created['id']}", {"url": url}, format="json")
    assert _delivered(organization, created["id"]) == "success"

    new = admin_client.post(f"/api/v1/webhooks/{created['id']}/rotate-secret").json()["data"]["secret"]
    url = guide_receiver(old if holds == "the old secret" else f"{new},{old}")
    admin_client.patch(f"/api/v1/webhooks/{created['id']}", {"url": url}, format="json")

    assert _delivered(organization, created["id"]) == "success"
    wrong = guide_receiver("whsec_" + "QUFB" * 8)  # a secret that signs nothing: refused
    admin_client.patch(f"/api/v1/webhooks/{created['id']}", {"url": wrong}, format="json")
    assert _delivered(organization, created["id"]) != "success"
