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
        "name": "reporting",
        "permissions": ["read"],
    }
    shown = browser.post("/dashboard/keys/", form, follow=True).content.decode()
    raw = re.search(r'id="new-key">([^<]+)<', shown).group(1)
    assert browser.post("/dashboard/keys/", form).status_code == 302  # sent twice: still one key
    key = ApiKey.objects.get(organization=organization)
    assert (
        key.permissions == ["read"] and 'id="new-key"' not in browser.get("/dashboard/keys/").content.decode()
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


@pytest.mark.parametrize("asked", [["admin"], ["write"], ["read", "write"], ["read", "admin"]])
def test_a_developer_cannot_mint_a_key_beyond_read(organization, asked):
    """Found by probing: a developer made an admin key, then with it changed a link's recipient_address, the
    organization's defaults, made a 100 % discount code and another admin key."""
    developer = make_member(organization, "dev@shop.example", "developer")
    browser = signed_in(developer)
    page = browser.get("/dashboard/keys/").content.decode()
    assert 'value="read"' in page and 'value="write"' not in page and 'value="admin"' not in page
    refused = browser.post(
        "/dashboard/keys/", {"form_token": _token(page), "name": "sneaky", "permissions": asked}
    )
    body = refused.content.decode()
    assert refused.status_code == 400 and 'id="permissions-error"' in body
    assert "Your role (developer) makes keys with read at most" in body
    assert not ApiKey.objects.exists()
    assert not AuditEvent.objects.filter(event_type="api_key.created").exists()


def test_a_developer_revokes_read_keys_only_and_owners_make_any(organization):
    production = make_api_key(organization, permissions=["read", "write"], name="production")[0]
    reporting = make_api_key(organization, permissions=["read"], name="reporting")[0]
    developer = signed_in(make_member(organization, "dev@shop.example", "developer"))
    page = developer.get("/dashboard/keys/").content.decode()
    assert (
        f'/dashboard/keys/{reporting.id}/revoke"' in page
        and f"/dashboard/keys/{production.id}/revoke" not in page
    )
    refused = developer.post(f"/dashboard/keys/{production.id}/revoke")
    assert (
        refused.status_code == 403
        and "&#x27;write&#x27; permission needs that much" in refused.content.decode()
    )
    production.refresh_from_db()
    assert production.is_active
    assert developer.post(f"/dashboard/keys/{reporting.id}/revoke").status_code == 302

    owner = signed_in(make_member(organization, "owner@shop.example", "owner", device=True))
    page = owner.get("/dashboard/keys/").content.decode()
    assert 'value="admin"' in page
    made = owner.post(
        "/dashboard/keys/", {"form_token": _token(page), "name": "ops", "permissions": ["admin"]}
    )
    assert made.status_code == 302 and ApiKey.objects.get(name="ops").permissions == ["admin"]
    assert owner.post(f"/dashboard/keys/{production.id}/revoke").status_code == 302


def test_the_service_itself_holds_the_rule_for_whoever_calls_it(organization, rf):
    """Not only the form: api_key_create and api_key_revoke refuse more than the actor holds."""
    from core.errors import Forbidden
    from platform_api.context import RequestContext
    from platform_api.services import api_key_create, api_key_revoke

    developer = make_member(organization, "dev@shop.example", "developer")
    request = rf.post("/dashboard/keys/")
    ctx = RequestContext.for_member(request, developer)
    assert ctx.permission == "read"
    with pytest.raises(Forbidden):
        api_key_create(organization=organization, name="x", permissions=["write"], ctx=ctx)
    admin_key = make_api_key(organization, permissions=["admin"])[0]
    with pytest.raises(Forbidden):
        api_key_revoke(api_key=admin_key, ctx=ctx)
    assert ApiKey.objects.filter(is_active=True).count() == 1
