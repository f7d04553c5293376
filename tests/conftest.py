from __future__ import annotations

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.factories import OrganizationFactory, make_api_key


@pytest.fixture(autouse=True)
def _isolated_rate_limits():
    """Rate-limit counters must not leak between tests (Redis keeps them across the run)."""
    if settings.REDIS_URL:
        from platform_api.ratelimit import _redis_client

        client = _redis_client()
        for key in client.scan_iter("ratelimit:*"):
            client.delete(key)
    yield


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def organization(db):
    return OrganizationFactory(slug="acme")


@pytest.fixture
def admin_key(organization):
    return make_api_key(organization, permissions=["admin"], name="admin")


@pytest.fixture
def admin_client(admin_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {admin_key[1]}")
    return client


def client_for(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client
