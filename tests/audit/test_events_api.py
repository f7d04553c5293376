from datetime import timedelta

import pytest
from django.utils import timezone

from tests.conftest import client_for
from tests.factories import AuditEventFactory, OrganizationFactory, make_api_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(organization):
    return client_for(make_api_key(organization, permissions=["read"])[1])


def test_lists_own_events_newest_first_with_pagination(reader, organization):
    now = timezone.now()
    old = AuditEventFactory(organization=organization, created_at=now - timedelta(hours=2))
    new = AuditEventFactory(organization=organization, created_at=now - timedelta(hours=1))
    AuditEventFactory(organization=OrganizationFactory(slug="other"))

    body = reader.get("/api/v1/events").json()

    assert body["success"] is True
    assert [e["id"] for e in body["data"]] == [new.id, old.id]
    assert body["pagination"] == {"page": 1, "limit": 20, "total": 2, "total_pages": 1}
    assert body["data"][0] == {
        "id": new.id,
        "event_type": "api_key.created",
        "resource_type": "api_key",
        "resource_id": new.resource_id,
        "ip_address": "203.0.113.7",
        "request_method": "POST",
        "request_path": "/api/v1/api-keys",
        "status_code": 201,
        "actor": new.actor,
        "created_at": new.created_at.isoformat().replace("+00:00", "Z"),
    }


def test_filters_by_type_and_resource_type(reader, organization):
    AuditEventFactory(organization=organization, event_type="api_key.created")
    revoked = AuditEventFactory(organization=organization, event_type="api_key.revoked")
    webhook = AuditEventFactory(
        organization=organization, event_type="webhook.created", resource_type="webhook"
    )

    assert [e["id"] for e in reader.get("/api/v1/events?type=api_key.revoked").json()["data"]] == [revoked.id]
    assert [e["id"] for e in reader.get("/api/v1/events?resource_type=webhook").json()["data"]] == [
        webhook.id
    ]
    assert reader.get("/api/v1/events?resource_type=api_key").json()["pagination"]["total"] == 2


def test_from_and_to_are_inclusive(reader, organization):
    base = timezone.now().replace(microsecond=0) - timedelta(days=3)
    events = [
        AuditEventFactory(organization=organization, created_at=base + timedelta(days=i)) for i in range(3)
    ]
    frm = (base + timedelta(days=1)).isoformat()
    to = (base + timedelta(days=2)).isoformat()

    response = reader.get("/api/v1/events", {"from": frm, "to": to})

    assert [e["id"] for e in response.json()["data"]] == [events[2].id, events[1].id]


def test_page_and_limit(reader, organization):
    for _ in range(5):
        AuditEventFactory(organization=organization)
    body = reader.get("/api/v1/events?page=2&limit=2").json()
    assert len(body["data"]) == 2
    assert body["pagination"] == {"page": 2, "limit": 2, "total": 5, "total_pages": 3}


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("from=yesterday", "from"),
        ("to=2026-13-01T00:00:00Z", "to"),
        ("limit=101", "limit"),
        ("page=x", "page"),
    ],
)
def test_malformed_query_is_400_invalid_field_value(reader, query, param):
    response = reader.get(f"/api/v1/events?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_field_value"
    assert response.json()["error"]["param"] == param


def test_listing_does_not_grow_with_page_size(reader, organization, django_assert_max_num_queries):
    for _ in range(30):
        AuditEventFactory(organization=organization)
    reader.get("/api/v1/events?limit=1")  # the key's rate-limit bucket and last_used_at exist now
    # Failed-auth budget (one read), key lookup, the key's rate-limit bucket (read under lock and
    # write, in a savepoint: database backend), count, page: the same for any page size.
    with django_assert_max_num_queries(8):
        response = reader.get("/api/v1/events?limit=100")
    assert response.status_code == 200
    body = response.json()
    assert len(body["data"]) == 30 and body["pagination"]["total"] == 30


def test_total_is_exact_up_to_the_window_and_pages_stop_there(reader, organization, monkeypatch):
    monkeypatch.setattr("audit.views.LIST_WINDOW", 4)
    events = [AuditEventFactory(organization=organization) for _ in range(6)]
    newest = sorted(events, key=lambda e: (e.created_at, e.id), reverse=True)

    first = reader.get("/api/v1/events?limit=3").json()
    second = reader.get("/api/v1/events?limit=3&page=2").json()
    third = reader.get("/api/v1/events?limit=3&page=3").json()

    assert first["pagination"] == {"page": 1, "limit": 3, "total": 4, "total_pages": 2}
    assert [e["id"] for e in first["data"] + second["data"]] == [e.id for e in newest[:4]]
    assert third["data"] == [] and third["pagination"]["total"] == 4
    narrowed = reader.get("/api/v1/events", {"to": newest[4].created_at.isoformat()}).json()
    assert newest[4].id in [e["id"] for e in narrowed["data"]]
    monkeypatch.setattr("audit.views.LIST_WINDOW", 10)
    assert reader.get("/api/v1/events?limit=3").json()["pagination"]["total"] == 6


def test_each_event_names_who_acted(admin_client, admin_key):
    admin_client.patch("/api/v1/organization", {"name": "Renamed"}, format="json")
    listed = admin_client.get("/api/v1/events").json()["data"]
    assert [event["actor"] for event in listed] == [f"api_key:{admin_key[0].id}"]
