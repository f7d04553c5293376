"""Each order's API body, rendered when the order changes, so that `GET /orders/{id}` (what integrators and
the SDK poll) is one indexed fetch of bytes instead of two queries and a serializer.

The body is `orders.representations.order_detail_data` of the order (sanitized: what anyone with the order's
id sees), as JSON text in `OrderBody`. It is rendered in the transaction of the change, so it commits with it
and no reader ever sees the change without its body, nor an older body after a newer one committed:

- at creation (`created`, from the order in hand: nothing else exists yet);
- on every `orders.events.Changed` (each status move, each deposit recorded or withdrawn, each relay or
  refund transaction recorded, the provider's route recorded), by a subscriber of every owner's orders.

A render first locks the order's row, so two transactions that change one order render one after the other:
the second, once the first committed, reads what the first wrote (PostgreSQL's read committed reads anew per
statement; SQLite has one writer at a time), and the body that commits last is the latest. `version` counts
the renders; the answer's ETag is it, so a poller that holds the latest gets 304.

An order without a body (made before bodies existed) is rendered on each read, as before, and writes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection
from django.db.models import F

from orders import events
from orders.models import Order, OrderBody
from orders.representations import order_detail_data
from orders.selectors import OrderWithTransactions, order_with_transactions


def _text(found: OrderWithTransactions) -> str:
    return json.dumps(order_detail_data(found), separators=(",", ":"), cls=DjangoJSONEncoder)


def created(order: Order) -> None:
    """The first body of an order just made, in its creating transaction."""
    OrderBody.objects.create(order_id=order.pk, body=_text(OrderWithTransactions(order=order)))


def refresh(order_id) -> None:
    """Render the order's body again, in the caller's transaction, after the order's row is locked."""
    Order.objects.select_for_update().filter(pk=order_id).values_list("pk", flat=True).first()
    found = order_with_transactions(order_id)
    if found is None:
        return
    text = _text(found)
    if not OrderBody.objects.filter(order_id=order_id).update(body=text, version=F("version") + 1):
        OrderBody.objects.create(order_id=order_id, body=text)


@events.on(events.Changed, owner=events.ANY)
def on_changed(event: events.Changed) -> None:
    refresh(event.order.pk)


@dataclass(frozen=True)
class Body:
    version: int
    text: str

    @property
    def etag(self) -> str:
        return f'"{self.version}"'


_READ = "SELECT version, body FROM orders_orderbody WHERE order_id = %s"


def read(order_id) -> Body | None:
    """The order's body as last committed, or None (no such order, or one made before bodies): one indexed
    fetch, the statement written out (the ORM's compiling of it would cost as much as the fetch)."""
    with connection.cursor() as cursor:
        cursor.execute(_READ, [OrderBody._meta.pk.get_db_prep_value(order_id, connection)])
        row = cursor.fetchone()
    return Body(version=int(row[0]), text=row[1]) if row else None
