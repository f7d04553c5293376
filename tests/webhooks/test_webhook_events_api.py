"""GET /api/v1/webhook-events (filters), GET /webhook-events/{id} (the bodies as delivered, every attempt) and
POST /webhook-events/{id}/resend (a new delivery under the event's id), against a real local receiver; the
Standard Webhooks `webhook-id` is the event's id on every attempt and resend."""

from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks.webhooks import Webhook
from werkzeug import Response

from audit.models import AuditEvent
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key
from tests.webhooks.conftest import make_due, make_endpoint
from webhooks.delivery import attempt_delivery
from webhooks.events import emit_event
from webhooks.models import WebhookDelivery, WebhookEvent
from webhooks.services import webhook_events_purge

pytestmark = pytest.mark.django_db


@pytest.fixture
def hooks(organization, receiver):
    """Two endpoints of the organization: `ok` answers 200, `down` answers 503; what each received."""
    seen: dict[str, list] = {"/ok": [], "/down": []}
    receiver.expect_request("/ok").respond_with_handler(lambda r: (seen["/ok"].append(r), Response("ok"))[1])
    receiver.expect_request("/down").respond_with_handler(
        lambda r: (seen["/down"].append(r), Response("no", status=503))[1]
    )
    ok, ok_secret = make_endpoint(organization, receiver.url_for("/ok"))
    down, _ = make_endpoint(organization, receiver.url_for("/down"), events=("refund.created",))
    return {"ok": ok, "ok_secret": ok_secret, "down": down, "seen": seen}


def delivered(event: WebhookEvent) -> None:
    for delivery in WebhookDelivery.objects.filter(event=event):
        attempt_delivery(delivery.id)


@pytest.fixture
def reader(organization):
    return client_for(make_api_key(organization, permissions=["read"])[1])


def test_the_list_filters_by_type_delivery_endpoint_and_time_and_shows_each_delivery(
    organization, hooks, reader
):
    paid = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_1"})
    refund = emit_event(organization=organization, event_type="refund.created", data={"id": "re_1"})
    delivered(paid)
    delivered(refund)  # 200 from `ok`, 503 from `down`
    never = emit_event(organization=organization, event_type="payment.failed", data={"id": "txn_2"})
    WebhookEvent.objects.filter(pk=never.pk).update(created_at=timezone.now() - timedelta(days=2))
    other = OrganizationFactory()
    emit_event(organization=other, event_type="payment.completed", data={"id": "txn_other"})

    def ids(query: str = "") -> list[str]:
        answer = reader.get(f"/api/v1/webhook-events{query}")
        assert answer.status_code == 200, answer.content
        return [each["id"] for each in answer.json()["data"]]

    listed = reader.get("/api/v1/webhook-events").json()
    assert (listed["object"], listed["total_count"], listed["has_more"], listed["url"]) == (
        "list",
        3,
        False,
        "/api/v1/webhook-events",
    )
    first = listed["data"][0]
    assert (first["object"], first["id"], first["type"], first["data"]) == (
        "webhook_event",
        refund.id,
        "refund.created",
        {"id": "re_1"},
    )
    assert first["id"].startswith("whe_") and isinstance(first["created_at"], int)
    assert sorted((d["endpoint"], d["status"], d["response_code"]) for d in first["deliveries"]) == sorted(
        [(hooks["ok"].id, "success", 200), (hooks["down"].id, "pending", 503)]
    )
    assert ids() == [refund.id, paid.id, never.id]
    assert ids("?type=payment.completed") == [paid.id]
    assert ids("?delivered=true") == [refund.id, paid.id]
    assert ids("?delivered=false") == [never.id]
    assert ids(f"?endpoint={hooks['down'].id}") == [refund.id]
    day_ago = int((timezone.now() - timedelta(days=1)).timestamp() * 1000)
    assert ids(f"?from={day_ago}") == [refund.id, paid.id]
    assert ids(f"?to={day_ago}") == [never.id]
    assert ids("?order=asc&limit=1&page=2") == [paid.id]


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("type=payment.done", "type"),
        ("delivered=yes", "delivered"),
        ("from=yesterday", "from"),
        ("to=-5", "to"),
        ("limit=0", "limit"),
        ("sort=url", "sort"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(reader, query, param):
    answer = reader.get(f"/api/v1/webhook-events?{query}")
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param


def test_one_event_shows_the_bodies_as_delivered_and_every_attempt(organization, hooks, reader):
    event = emit_event(organization=organization, event_type="refund.created", data={"id": "re_9"})
    delivered(event)
    down = WebhookDelivery.objects.get(event=event, endpoint=hooks["down"])
    make_due(down)
    attempt_delivery(down.id)  # a second attempt, failed again

    answer = reader.get(f"/api/v1/webhook-events/{event.id}")

    assert answer.status_code == 200
    by_endpoint = {d["endpoint"]: d for d in answer.json()["deliveries"]}
    assert by_endpoint[hooks["ok"].id]["body"].encode() == hooks["seen"]["/ok"][0].get_data()
    assert by_endpoint[hooks["down"].id]["body"].encode() == hooks["seen"]["/down"][1].get_data()
    assert [(a["number"], a["response_code"]) for a in by_endpoint[hooks["down"].id]["attempt_log"]] == [
        (1, 503),
        (2, 503),
    ]
    assert by_endpoint[hooks["ok"].id]["attempt_log"][0]["response_code"] == 200


def test_another_organizations_event_is_not_found_and_cannot_be_resent(organization, hooks, admin_client):
    other = OrganizationFactory()
    theirs = emit_event(organization=other, event_type="payment.completed", data={"id": "txn_x"})

    assert admin_client.get(f"/api/v1/webhook-events/{theirs.id}").status_code == 404
    answer = admin_client.post(f"/api/v1/webhook-events/{theirs.id}/resend", {}, format="json")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "resource_not_found"
    assert WebhookDelivery.objects.filter(event=theirs).count() == 0


def test_a_resend_is_a_new_delivery_of_the_same_body_under_the_same_webhook_id(
    organization, hooks, admin_client, reader
):
    event = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_3"})
    delivered(event)
    original = hooks["seen"]["/ok"][0]

    assert reader.post(f"/api/v1/webhook-events/{event.id}/resend", {}, format="json").status_code == 403
    answer = admin_client.post(f"/api/v1/webhook-events/{event.id}/resend", {}, format="json")

    assert answer.status_code == 200, answer.content
    deliveries = answer.json()["deliveries"]
    assert [(d["endpoint"], d["status"]) for d in deliveries] == [
        (hooks["ok"].id, "success"),
        (hooks["ok"].id, "pending"),
    ]
    resent = WebhookDelivery.objects.get(pk=deliveries[1]["id"])
    attempt_delivery(resent.id)
    again = hooks["seen"]["/ok"][1]
    assert again.get_data() == original.get_data()
    assert again.headers["webhook-id"] == original.headers["webhook-id"] == event.id
    assert again.headers["X-Service-Delivery-Id"] != original.headers["X-Service-Delivery-Id"]
    assert Webhook(hooks["ok_secret"]).verify(again.get_data(), dict(again.headers))["data"] == {
        "id": "txn_3"
    }
    assert AuditEvent.objects.filter(event_type="webhook_event.resent", resource_id=event.id).count() == 1


def test_a_resend_to_one_endpoint_even_one_it_never_went_to(organization, hooks, admin_client, receiver):
    event = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_4"})
    delivered(event)  # to `ok` only: `down` takes refunds alone

    answer = admin_client.post(
        f"/api/v1/webhook-events/{event.id}/resend", {"endpoint": hooks["down"].id}, format="json"
    )

    assert answer.status_code == 200
    new = WebhookDelivery.objects.get(event=event, endpoint=hooks["down"])
    attempt_delivery(new.id)
    body = hooks["seen"]["/down"][0].get_json()
    assert (body["event"], body["webhook_id"], body["data"]) == (
        "payment.completed",
        hooks["down"].id,
        {"id": "txn_4"},
    )


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"endpoint": 5}, 400, "endpoint"),
        ({"endpoint": "wh_doesnotexist"}, 404, "endpoint"),
        ({"endpoint": "theirs"}, 404, "endpoint"),
        ({"endpoint": "disabled"}, 400, "endpoint"),
    ],
)
def test_a_bad_resend_changes_nothing(organization, hooks, admin_client, receiver, body, status, param):
    event = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_5"})
    if body["endpoint"] == "theirs":
        body = {"endpoint": make_endpoint(OrganizationFactory(), receiver.url_for("/ok"))[0].id}
    elif body["endpoint"] == "disabled":
        type(hooks["ok"]).objects.filter(pk=hooks["ok"].pk).update(is_active=False)
        body = {"endpoint": hooks["ok"].id}
    before = WebhookDelivery.objects.count()

    answer = admin_client.post(f"/api/v1/webhook-events/{event.id}/resend", body, format="json")

    assert answer.status_code == status
    assert answer.json()["error"]["param"] == param
    assert WebhookDelivery.objects.count() == before
    assert not AuditEvent.objects.filter(event_type="webhook_event.resent").exists()


def test_events_past_their_retention_go_with_their_deliveries(organization, hooks, settings):
    old = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_old"})
    delivered(old)
    retrying = emit_event(organization=organization, event_type="refund.created", data={"id": "re_old"})
    delivered(retrying)  # `down` answered 503: still being retried
    recent = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_new"})
    long_ago = timezone.now() - timedelta(days=settings.WEBHOOK_EVENT_RETENTION_DAYS, hours=1)
    WebhookEvent.objects.filter(pk__in=[old.pk, retrying.pk]).update(created_at=long_ago)

    assert webhook_events_purge() == 1

    assert set(WebhookEvent.objects.values_list("pk", flat=True)) == {retrying.pk, recent.pk}
    assert not WebhookDelivery.objects.filter(event_id=old.pk).exists()
    assert WebhookDelivery.objects.filter(event__isnull=True).count() == 0


def test_a_page_of_events_costs_the_same_queries_however_many_deliveries(organization, hooks, reader):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert reader.get("/api/v1/webhook-events").status_code == 200
        return len(captured)

    emit_event(organization=organization, event_type="refund.created", data={"id": "re_1"})
    queries()  # the key is read (and cached) on the first request
    one = queries()
    for n in range(5):
        delivered(emit_event(organization=organization, event_type="refund.created", data={"id": f"re_{n}"}))
    assert queries() == one


def test_listen_gives_the_events_after_one_oldest_first_less_those_had_and_of_the_types_asked(
    organization, hooks, reader
):
    first = emit_event(organization=organization, event_type="payment.completed", data={"n": 1})
    second = emit_event(organization=organization, event_type="refund.created", data={"n": 2})
    third = emit_event(organization=organization, event_type="refund.failed", data={"n": 3})
    fourth = emit_event(organization=organization, event_type="payment.failed", data={"n": 4})
    emit_event(organization=OrganizationFactory(), event_type="refund.created", data={"n": "theirs"})

    def listened(query: str) -> list[str]:
        answer = reader.get(f"/api/v1/webhook-events/listen?wait=0&{query}")
        assert answer.status_code == 200, answer.content
        assert answer.json()["object"] == "list" and isinstance(answer.json()["now"], int)
        return [event["id"] for event in answer.json()["data"]]

    assert listened(f"after={first.id}") == [second.id, third.id, fourth.id]
    assert listened(f"after={first.id}&skip={third.id},{second.id}") == [fourth.id]
    assert listened(f"after={first.id}&types=refund.*") == [second.id, third.id]
    assert listened(f"after={first.id}&types=payment.failed,refund.created") == [second.id, fourth.id]
    assert listened("since=0") == [first.id, second.id, third.id, fourth.id]
    assert listened("") == []  # from now


@pytest.mark.django_db(transaction=True)
def test_listen_waits_for_the_next_event(organization, hooks, reader):
    import threading

    from django.db import connection

    started = timezone.now()
    emitted: list = []

    def later():
        import time

        time.sleep(1.0)
        emitted.append(emit_event(organization=organization, event_type="payment.completed", data={"n": 1}))
        connection.close()

    thread = threading.Thread(target=later)
    thread.start()
    answer = reader.get(f"/api/v1/webhook-events/listen?wait=10&since={int(started.timestamp() * 1000)}")
    thread.join()

    assert [event["id"] for event in answer.json()["data"]] == [emitted[0].id]
    assert (timezone.now() - started).total_seconds() < 9  # answered at the event, not at the end of its wait


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("types=payment.done", "types"),
        ("types=nothing.*", "types"),
        ("wait=26", "wait"),
        ("wait=-1", "wait"),
        ("since=soon", "since"),
        ("skip=" + ",".join(f"whe_{n:026d}" for n in range(220)), "skip"),
    ],
)
def test_listen_refuses_a_bad_parameter_naming_it(organization, reader, query, param):
    answer = reader.get(f"/api/v1/webhook-events/listen?wait=0&{query}")
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param


@pytest.mark.parametrize("whose", ["nobody", "theirs"])
def test_listen_after_an_event_that_is_not_the_organizations_is_not_found(organization, reader, whose):
    after = "whe_nosuchevent"
    if whose == "theirs":
        after = emit_event(organization=OrganizationFactory(), event_type="refund.created", data={}).id
    answer = reader.get(f"/api/v1/webhook-events/listen?wait=0&after={after}")
    assert answer.status_code == 404
    assert (answer.json()["error"]["code"], answer.json()["error"]["param"]) == (
        "resource_not_found",
        "after",
    )


def test_listen_waits_no_longer_than_the_setting(organization, reader, settings):
    import time

    settings.WEBHOOK_LISTEN_MAX_WAIT_SECONDS = 1
    started = time.monotonic()
    answer = reader.get("/api/v1/webhook-events/listen?wait=20")
    assert answer.status_code == 200 and answer.json()["data"] == []
    assert 0.9 < time.monotonic() - started < 5


def test_resends_are_limited_per_event_and_per_endpoint(organization, hooks, admin_client, settings):
    """The probe's 30 resend calls made 1,092 POSTs to one URL in a minute (issue 64, item 7)."""
    settings.WEBHOOK_RESENDS_PER_EVENT, settings.WEBHOOK_RESENDS_PER_ENDPOINT = 2, 3
    first = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_a"})
    second = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_b"})

    def resend(event):
        return admin_client.post(f"/api/v1/webhook-events/{event.id}/resend", {}, format="json")

    assert [resend(first).status_code for _ in range(2)] == [200, 200]
    per_event = resend(first)
    assert per_event.status_code == 429 and per_event["Retry-After"]
    assert "resends of event" in per_event.json()["error"]["message"]
    assert resend(second).status_code == 200  # the endpoint's third
    per_endpoint = resend(second)
    assert per_endpoint.status_code == 429 and "to one endpoint" in per_endpoint.json()["error"]["message"]
    assert WebhookDelivery.objects.filter(event=first).count() == 1 + 2
    assert WebhookDelivery.objects.filter(event=second).count() == 1 + 1
