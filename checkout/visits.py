"""Views of the hosted link page and of widget pages: counted without a database write per view.

A flash sale is thousands of payers opening one link's page at once. Each view used to insert a row
(`LinkVisit`, or a `WidgetEvent` and an increment of `Widget.current_views`) in the request, the page's
costliest part after the template. With a shared Redis a view is now one RPUSH onto a list, and beat's
`checkout.tasks.flush_views` moves the list into the database in batches every VIEWS_FLUSH_SECONDS; a read
of the counts (`views_settled`) writes what is buffered first, so a merchant's stats never lag the page.

The flush is safe to kill at any point. It claims a batch by moving it, in one Lua script, onto a
"flushing" list, writes it in one transaction, and only then deletes the claim; a flush that died leaves
its claim, which the next flush (after the lock it held expires) writes again first. A link visit
carries its id from the page, so a batch written twice inserts each visit once; a widget view has no id
of its own, so a flush killed between its commit and the claim's deletion counts that batch's widget
views twice, once. Views are analytics, not money: nothing is paid or refunded from them.

Without a Redis (the embedded defaults), or while it fails, the view is written in the request, as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import Counter
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from redis.exceptions import RedisError

from checkout.models import LinkVisit, PaymentLink, Widget, WidgetEvent, new_visitor_id
from core.shared_redis import shared_redis

logger = logging.getLogger(__name__)

PENDING = "checkout:views"
CLAIMED = "checkout:views:flushing"
LOCK = "checkout:views:lock"
LOCK_SECONDS = 60
BATCH = 2000

# Moves up to ARGV[1] views from the pending list onto the claim, unless a claim is left over (a flush that
# died): then that claim is returned again, to be written first.
_CLAIM = """
local left = redis.call('LRANGE', KEYS[2], 0, -1)
if #left > 0 then return left end
local views = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #views == 0 then return views end
redis.call('LTRIM', KEYS[1], #views, -1)
redis.call('RPUSH', KEYS[2], unpack(views))
return views
"""


def _push(view: dict) -> bool:
    client = shared_redis()
    if client is None:
        return False
    try:
        client.rpush(PENDING, json.dumps(view, separators=(",", ":")))
    except RedisError as exc:
        logger.warning("View not buffered (%s): written to the database now", exc)
        return False
    return True


def link_visit_record(*, link_id: str, **fields: str) -> None:
    """A view of the link's page: country, referrer, user agent and UTM (never the IP address)."""
    if not _push(
        {"kind": "link", "link": link_id, "id": new_visitor_id(), "at": timezone.now().isoformat(), **fields}
    ):
        LinkVisit.objects.create(payment_link_id=link_id, **fields)


def widget_view_record(widget_id: str) -> None:
    if not _push({"kind": "widget", "widget": widget_id, "at": timezone.now().isoformat()}):
        WidgetEvent.objects.create(widget_id=widget_id, kind=WidgetEvent.Kind.VIEW)
        Widget.objects.filter(pk=widget_id).update(current_views=F("current_views") + 1)


_VISIT_FIELDS = ("country", "referrer", "user_agent", "utm_source", "utm_medium", "utm_campaign")


@transaction.atomic
def _write(views: list[dict]) -> None:
    """One batch in one transaction: link visits by their ids (written once however often the batch is),
    widget views as events and one increment per widget. Views of a link or widget deleted since are
    dropped."""
    visits = [view for view in views if view["kind"] == "link"]
    if visits:
        live = set(
            PaymentLink.objects.filter(pk__in={v["link"] for v in visits}).values_list("pk", flat=True)
        )
        LinkVisit.objects.bulk_create(
            [
                LinkVisit(
                    id=v["id"],
                    payment_link_id=v["link"],
                    created_at=datetime.fromisoformat(v["at"]),
                    **{name: v.get(name, "") for name in _VISIT_FIELDS},
                )
                for v in visits
                if v["link"] in live
            ],
            ignore_conflicts=True,
        )
    widget_views = [view for view in views if view["kind"] == "widget"]
    if widget_views:
        live = set(
            Widget.objects.filter(pk__in={v["widget"] for v in widget_views}).values_list("pk", flat=True)
        )
        widget_views = [v for v in widget_views if v["widget"] in live]
        WidgetEvent.objects.bulk_create(
            [
                WidgetEvent(
                    widget_id=v["widget"],
                    kind=WidgetEvent.Kind.VIEW,
                    created_at=datetime.fromisoformat(v["at"]),
                )
                for v in widget_views
            ]
        )
        for widget_id, count in sorted(Counter(v["widget"] for v in widget_views).items()):
            Widget.objects.filter(pk=widget_id).update(current_views=F("current_views") + count)


def flush_views(batch: int = BATCH) -> int:
    """Write what the pages buffered; returns the views written. One flusher at a time (a lock in Redis)."""
    return _flush(batch) or 0


def views_settled(*, timeout: float = 2.0) -> None:
    """Before a read of view counts (a link's stats and visitors, a widget's views): every view buffered so
    far is written, so a view the reader just made is counted (an SDK reads the stats right after a visit).
    Waits up to `timeout` for a flush another process is running. Merchant reads only: pages never wait."""
    deadline = time.monotonic() + timeout
    while _flush(BATCH) is None and time.monotonic() < deadline:
        time.sleep(0.05)  # another flush holds the lock, writing what this read waits for


def _flush(batch: int) -> int | None:
    """The views written, or None when another flush holds the lock."""
    client = shared_redis()
    if client is None:
        return 0
    token = new_visitor_id()
    try:
        if not client.set(LOCK, token, nx=True, ex=LOCK_SECONDS):
            return None  # another flush is running
    except RedisError as exc:
        logger.warning("Views not flushed (%s): they wait in Redis", exc)
        return 0
    written = 0
    try:
        claim = client.register_script(_CLAIM)
        while True:
            raw = claim(keys=[PENDING, CLAIMED], args=[batch])
            if not raw:
                return written
            views = []
            for item in raw:
                try:
                    views.append(json.loads(item))
                except ValueError:
                    logger.error("A buffered view is not JSON, dropped: %r", item[:200])
            _write(views)
            client.delete(CLAIMED)
            written += len(views)
    except RedisError as exc:
        logger.warning("Views flush stopped (%s): the rest wait in Redis", exc)
        return written
    finally:
        release = (
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
        )
        with contextlib.suppress(RedisError):  # else it expires
            client.eval(release, 1, LOCK, token)
