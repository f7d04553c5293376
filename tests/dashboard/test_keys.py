"""API keys in the dashboard: made once per form, shown once, revoked at once; developers and above only."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEvent
from platform_api.models import ApiKey
from tests.dashboard.conftest import make_member, signed_in
from tests.factories import OrganizationFactory, make_api_key

pytestmark = pytest.mark.django_db


def _token(page: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)


def test_a_developer_creates_a_key_shown_once_and_revokes_it(organization):
    developer = make_member(organization, "dev@shop.example", "developer")
    browser = signed_in(developer)
    form = {
        "form_token": _token(browser.get("/dashboard/keys/").content.decode()),
        "name": "shop backend",
        "permissions": ["read", "write"],
    }
    shown = browser.post("/dashboard/keys/", form, follow=True).content.decode()
    raw = re.search(r'id="new-key">([^<]+)<', shown).group(1)
    assert browser.post("/dashboard/keys/", form).status_code == 302  # sent twice: still one key
    key = ApiKey.objects.get(organization=organization)
    assert (
        key.permissions == ["read", "write"]
        and 'id="new-key"' not in browser.get("/dashboard/keys/").content.decode()
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get("/api/v1/payment-links").status_code == 200
    assert browser.post(f"/dashboard/keys/{key.id}/revoke").status_code == 302
    assert api.get("/api/v1/payment-links").status_code == 401
    actors = set(AuditEvent.objects.filter(resource_id=key.id).values_list("event_type", "actor"))
    assert actors == {
        ("api_key.created", f"member:{developer.id}"),
        ("api_key.revoked", f"member:{developer.id}"),
    }


def test_bad_fields_are_said_beside_them(organization):
    browser = signed_in(make_member(organization, "dev@shop.example", "developer"))
    token = _token(browser.get("/dashboard/keys/").content.decode())
    refused = browser.post("/dashboard/keys/", {"form_token": token, "name": "", "expires": "2001-01-01"})
    page = refused.content.decode()
    assert refused.status_code == 400 and 'id="name-error"' in page and 'id="permissions-error"' in page
    assert 'id="expires-error"' in page and not ApiKey.objects.exists()


def test_viewers_see_no_keys_and_nobody_revokes_anothers(organization):
    mine = make_api_key(organization, permissions=["read"], name="mine")[0]
    theirs = make_api_key(OrganizationFactory(slug="other"), permissions=["read"], name="theirs")[0]
    viewer = signed_in(make_member(organization))
    assert viewer.get("/dashboard/keys/").status_code == 403
    assert viewer.post(f"/dashboard/keys/{mine.id}/revoke").status_code == 403
    developer = signed_in(make_member(organization, "dev@shop.example", "developer"))
    assert developer.post(f"/dashboard/keys/{theirs.id}/revoke").status_code == 404
    assert ApiKey.objects.filter(is_active=True).count() == 2
