import hashlib
import hmac
import json

import pytest
from django.utils import timezone

from platform_api.http import RequestContext
from webhooks.services import webhook_endpoint_create


def make_endpoint(organization, url, events=("*",)):
    ctx = RequestContext(
        organization=organization,
        api_key=None,
        ip_address="127.0.0.1",
        method="POST",
        path="/api/v1/webhooks",
    )
    return webhook_endpoint_create(ctx=ctx, url=url, events=list(events))


def verify(request, secret: str) -> dict:
    """What the README's receiver does: check the signature over the raw body, then parse it."""
    expected = hmac.new(secret.encode(), request.get_data(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, request.headers["X-Service-Signature"])
    return json.loads(request.get_data())


def make_due(delivery):
    type(delivery).objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())


@pytest.fixture
def receiver(httpserver):
    return httpserver
