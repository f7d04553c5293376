import re

import pytest
from django.contrib.admin.utils import quote

from audit.models import AuditEvent
from platform_api.models import ApiKey
from tests.conftest import client_for
from tests.factories import AuditEventFactory, make_api_key

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/admin/",
        "/admin/platform_api/organization/",
        "/admin/platform_api/apikey/",
        "/admin/platform_api/apikey/add/",
        "/admin/quickpay/quickpayment/",
        "/admin/audit/auditevent/",
        "/admin/audit/auditevent/?event_type=api_key.created",
    ],
)
def test_admin_pages_render(staff, organization, url):
    make_api_key(organization)
    AuditEventFactory(organization=organization)
    assert staff.get(url).status_code == 200


def test_key_created_in_admin_is_shown_once_and_works(staff, organization):
    response = staff.post(
        "/admin/platform_api/apikey/add/",
        {"organization": organization.pk, "name": "from admin", "permissions": ["read"]},
        follow=True,
    )

    assert response.status_code == 200
    page = response.content.decode()
    raw = re.search(r"svc_live_[0-9A-Za-z]{40}", page).group(0)
    key = ApiKey.objects.get(name="from admin")
    assert key.key_prefix == raw[: len(key.key_prefix)]
    assert f"from admin ({key.key_prefix}...)" in page
    assert client_for(raw).get("/api/v1/events").status_code == 200
    page = staff.get(f"/admin/platform_api/apikey/{quote(key.pk)}/change/")  # the admin escapes "_" in ids
    assert page.status_code == 200
    assert key.key_prefix in page.content.decode() and raw not in page.content.decode()
    assert AuditEvent.objects.filter(event_type="api_key.created", resource_id=key.pk).count() == 1


def test_revoke_action(staff, organization):
    key, raw = make_api_key(organization)

    staff.post("/admin/platform_api/apikey/", {"action": "revoke_selected", "_selected_action": [key.pk]})

    key.refresh_from_db()
    assert key.is_active is False
    assert client_for(raw).get("/api/v1/events").json()["error"]["code"] == "key_revoked"
    assert AuditEvent.objects.filter(event_type="api_key.revoked", resource_id=key.pk).exists()


def test_audit_events_are_read_only(staff, organization):
    event = AuditEventFactory(organization=organization)
    assert staff.get("/admin/audit/auditevent/add/").status_code == 403
    assert staff.post(f"/admin/audit/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()
