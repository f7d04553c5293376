"""Page views buffered in Redis and flushed into the database (checkout/visits.py)."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from checkout import visits
from checkout.models import LinkVisit, PaymentLink, Widget, WidgetEvent
from checkout.visits import flush_views
from tests.factories import PaymentLinkFactory, WidgetFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def link(tokens):
    return PaymentLinkFactory()


@pytest.fixture
def widget(link):
    return WidgetFactory(organization=link.organization)


def test_a_view_waits_in_redis_until_the_flush_writes_it_once(shared_redis, link, widget):
    page = Client().get(f"/pay/{link.short_code}?utm_source=mail", HTTP_REFERER="https://news.example/")
    assert page.status_code == 200
    Client().get(f"/widgets/{widget.short_code}")
    assert not LinkVisit.objects.exists() and not WidgetEvent.objects.exists()  # nothing written by the page
    assert shared_redis.llen(visits.PENDING) == 2

    assert flush_views() == 2
    visit = LinkVisit.objects.get()
    assert (visit.payment_link_id, visit.utm_source, visit.referrer) == (
        link.pk,
        "mail",
        "https://news.example/",
    )
    assert WidgetEvent.objects.get().kind == "view"
    assert Widget.objects.get(pk=widget.pk).current_views == 1
    assert flush_views() == 0 and LinkVisit.objects.count() == 1
    assert not shared_redis.exists(visits.PENDING, visits.CLAIMED)


def test_a_batch_a_killed_flush_left_claimed_is_written_first_and_visits_once(shared_redis, link):
    """A flush died after its commit, before it deleted its claim: the visits in it are not counted again."""
    Client().get(f"/pay/{link.short_code}")
    Client().get(f"/pay/{link.short_code}")
    claimed = [json.loads(raw) for raw in shared_redis.lrange(visits.PENDING, 0, -1)]
    visits._write(claimed)  # what the dead flush committed
    shared_redis.delete(visits.PENDING)
    shared_redis.rpush(visits.CLAIMED, *(json.dumps(view) for view in claimed))
    Client().get(f"/pay/{link.short_code}")  # a view since, still pending

    assert flush_views() == 3
    assert LinkVisit.objects.filter(payment_link=link).count() == 3


def test_one_flush_at_a_time(shared_redis, link):
    Client().get(f"/pay/{link.short_code}")
    shared_redis.set(visits.LOCK, "another", ex=30)
    assert flush_views() == 0 and not LinkVisit.objects.exists()
    shared_redis.delete(visits.LOCK)
    assert flush_views() == 1


def test_views_of_a_link_deleted_before_the_flush_are_dropped(shared_redis, link, widget):
    Client().get(f"/pay/{link.short_code}")
    Client().get(f"/widgets/{widget.short_code}")
    Widget.objects.filter(pk=widget.pk).delete()
    PaymentLink.objects.filter(pk=link.pk).delete()
    assert flush_views() == 2
    assert not LinkVisit.objects.exists() and not WidgetEvent.objects.exists()
    assert not shared_redis.exists(visits.PENDING, visits.CLAIMED)


def test_without_redis_or_with_it_down_the_page_writes_the_view_itself(settings, link, widget):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens there
    assert Client().get(f"/pay/{link.short_code}").status_code == 200
    assert Client().get(f"/widgets/{widget.short_code}").status_code == 200
    assert LinkVisit.objects.filter(payment_link=link).count() == 1
    assert Widget.objects.get(pk=widget.pk).current_views == 1
    settings.REDIS_URL = ""
    Client().get(f"/pay/{link.short_code}")
    assert LinkVisit.objects.filter(payment_link=link).count() == 2
    assert flush_views() == 0


def test_the_cached_link_page_shows_an_edit_at_once_and_its_own_nonce_and_token(
    admin_client, organization, tokens
):
    """The page is rendered once per link version and process; each response has its own CSP nonce and
    CSRF token, and the next view after an edit (of the link or its items) shows the edit."""
    link = PaymentLinkFactory(organization=organization)
    payer = Client(enforce_csrf_checks=True)
    first, second = payer.get(f"/pay/{link.short_code}"), Client().get(f"/pay/{link.short_code}")
    nonces = [
        re.search(r'<style nonce="([^"]+)"', page.content.decode()).group(1) for page in (first, second)
    ]
    assert nonces[0] != nonces[1]
    for page, nonce in zip((first, second), nonces, strict=True):
        assert f"'nonce-{nonce}'" in page["Content-Security-Policy"]
    tokens = [
        re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', p.content.decode()).group(1)
        for p in (first, second)
    ]
    assert tokens[0] != tokens[1]

    url = f"/api/v1/payment-links/{link.pk}"
    assert admin_client.patch(url, {"name": "Summer sale"}, format="json").status_code == 200
    assert "Summer sale" in payer.get(f"/pay/{link.short_code}").content.decode()
    assert (
        admin_client.post(
            f"{url}/items", {"name": "Beach towel", "amount": "1000000"}, format="json"
        ).status_code
        == 201
    )
    assert "Beach towel" in payer.get(f"/pay/{link.short_code}").content.decode()
    # The token held by the payer's cookie is accepted by the form it was given.
    form = {"pay_with": f"8453:{link.token_address}", "csrfmiddlewaretoken": tokens[0]}
    assert payer.post(f"/pay/{link.short_code}", form).status_code == 302
    assert Client(enforce_csrf_checks=True).post(f"/pay/{link.short_code}", form).status_code == 403


def test_counts_read_right_after_a_visit_include_the_views_still_in_redis(
    shared_redis, admin_client, organization
):
    """Found with the anchor's SDK: it reads a link's stats right after a visit; on Redis the view was not there
    until beat flushed it."""
    link = PaymentLinkFactory(organization=organization)
    widget = WidgetFactory(organization=organization)
    Client().get(f"/pay/{link.short_code}?utm_source=sdk")
    Client().get(f"/widgets/{widget.short_code}")
    assert shared_redis.llen(visits.PENDING) == 2  # not flushed yet

    stats = admin_client.get(f"/api/v1/payment-links/{link.pk}/stats").json()
    assert stats["views"] == 1
    visitors = admin_client.get(f"/api/v1/payment-links/{link.pk}/visitors").json()["data"]
    assert [v["utm_source"] for v in visitors] == ["sdk"]
    Client().get(f"/widgets/{widget.short_code}")
    assert admin_client.get(f"/api/v1/widgets/{widget.pk}").json()["current_views"] == 2
    assert admin_client.get(f"/api/v1/widgets/{widget.pk}/stats").json()["views"] == 2
    assert not shared_redis.exists(visits.PENDING, visits.CLAIMED)
    assert LinkVisit.objects.count() == 1  # each view once


def test_a_read_waits_for_a_flush_another_process_is_running(shared_redis, link, monkeypatch):
    Client().get(f"/pay/{link.short_code}")
    shared_redis.set(visits.LOCK, "another flusher", ex=visits.LOCK_SECONDS)
    released = []

    def sleep(seconds):  # the other flusher finishes while this read waits
        shared_redis.delete(visits.LOCK)
        released.append(seconds)

    monkeypatch.setattr(visits.time, "sleep", sleep)
    visits.views_settled()
    assert released and LinkVisit.objects.filter(payment_link=link).count() == 1
