"""GET /orders/{id} is answered from the body rendered at each change (orders.bodies): every read equals what
the serializers build from the rows at that moment, through every move of the state machine, each kind of
transaction and concurrent writers; and a poller holding the latest version gets 304 (issue 46, item 1)."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import close_old_connections

from orders import lifecycle, selectors
from orders.models import DepositTx, Order, OrderBody
from orders.representations import order_detail_data
from tests.factories import DepositFactory
from tests.orders.conftest import order_body

Status = Order.Status


def _built(order_id) -> dict:
    """What the serializers build from the rows now, through JSON as the wire carries it."""
    return json.loads(json.dumps(order_detail_data(selectors.order_with_transactions(order_id))))


def _read(client, order_id) -> dict:
    response = client.get(f"/orders/{order_id}")
    assert response.status_code == 200
    assert response.json()["success"] is True and response.json()["statusCode"] == 200
    return response.json()["data"]


def _new_order(client) -> Order:
    response = client.post(
        "/orders", order_body(srcAmount="1000", payload={"expectedDstAmount": "900"}), format="json"
    )
    assert response.status_code == 200, response.json()
    return Order.objects.get(pk=response.json()["data"]["id"])


def _deposit(order: Order, n: int, amount: int, deposit_id: int | None = None) -> None:
    lifecycle.order_record_deposit(
        order=order,
        chain=order.src_chain,
        tx_hash="0x" + f"{n:064x}",
        amount=amount,
        from_address="0x" + "2" * 40,
        log_index=n,
        deposit_id=deposit_id,
    )


@pytest.mark.django_db
def test_each_read_equals_what_the_serializers_build_through_every_change(api_client, tokens):
    reads: list[str] = []

    def check(order: Order, what: str) -> None:
        assert _read(api_client, order.pk) == _built(order.pk), what
        reads.append(what)

    delivered = _new_order(api_client)
    check(delivered, "created")
    _deposit(delivered, 1, 400)
    check(delivered, "a partial deposit")
    _deposit(delivered, 2, 600)
    assert Order.objects.get(pk=delivered.pk).status == Status.QUOTING_AFTER_DEPOSIT
    check(delivered, "paid")
    lifecycle.order_record_relay_route(order=delivered, relay={"requestId": "0xabc", "steps": []})
    check(delivered, "the provider's route")
    for status in (Status.SENDING_TOKEN_FROM_VAULT, Status.RELAY):
        lifecycle.order_advance(order=delivered, to_status=status)
        check(delivered, status)
    lifecycle.order_record_relay_txs(order=delivered, txs=[(42161, "0x" + "d" * 64, "success")])
    check(delivered, "a relay transaction")
    lifecycle.order_mark_executed(order=delivered, execute_tx={"chain": 42161, "txHash": "0x" + "d" * 64})
    check(delivered, "executed")
    assert _read(api_client, delivered.pk)["points"] is not None

    refunded = _new_order(api_client)
    _deposit(refunded, 3, 1000)
    lifecycle.order_fail(order=refunded, error="RELAY_FAILED: no route")
    assert Order.objects.get(pk=refunded.pk).status == Status.REFUNDING
    check(refunded, "failed, refunding")
    deposit = DepositTx.objects.get(order=refunded)
    lifecycle.order_record_refund_tx(
        order=refunded, deposit=deposit, tx_hash="0x" + "e" * 64, chain=8453, amount=1000, succeeded=False
    )
    check(refunded, "a failed refund")
    lifecycle.order_record_refund_tx(
        order=refunded, deposit=deposit, tx_hash="0x" + "f" * 64, chain=8453, amount=1000, succeeded=True
    )
    lifecycle.order_refunded(order=Order.objects.get(pk=refunded.pk), refund_tx_hash="0x" + "f" * 64)
    check(refunded, "refunded")

    withdrawn = _new_order(api_client)
    seen = DepositFactory(to_address=withdrawn.global_address, owner=f"order:{withdrawn.pk}")
    _deposit(withdrawn, 4, 10, deposit_id=seen.pk)
    check(withdrawn, "a deposit")
    lifecycle.order_withdraw_deposit(order=withdrawn, deposit_id=seen.pk)
    assert DepositTx.objects.get(order=withdrawn).withdrawn_at is not None
    check(withdrawn, "the deposit withdrawn by a reorg")
    lifecycle.order_expire(order=Order.objects.get(pk=withdrawn.pk), reason="not paid in time")
    check(withdrawn, "expired")

    # Each read above was the stored body's (one per order, a version per render), not a live render.
    versions = dict(OrderBody.objects.values_list("order_id", "version"))
    assert set(versions) == {delivered.pk, refunded.pk, withdrawn.pk}
    assert versions[delivered.pk] >= 6 and len(reads) == 14


@pytest.mark.django_db
def test_a_poller_holding_the_latest_version_gets_304_and_a_change_gives_a_new_one(api_client, tokens):
    order = _new_order(api_client)
    first = api_client.get(f"/orders/{order.pk}")
    etag = first["ETag"]

    unchanged = api_client.get(f"/orders/{order.pk}", HTTP_IF_NONE_MATCH=etag)
    assert (unchanged.status_code, unchanged["ETag"], unchanged.content) == (304, etag, b"")
    _deposit(order, 1, 10)
    changed = api_client.get(f"/orders/{order.pk}", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
    assert len(changed.json()["data"]["depositTxs"]) == 1


@pytest.mark.django_db
def test_an_order_without_a_body_is_rendered_as_before_and_bad_ids_are_the_envelopes(api_client, tokens):
    order = _new_order(api_client)
    OrderBody.objects.filter(order_id=order.pk).delete()  # as an order made before bodies existed
    assert _read(api_client, order.pk) == _built(order.pk)
    assert not OrderBody.objects.exists()  # a read writes nothing
    for path, status in (
        ("/orders/not-a-uuid", 400),
        ("/orders/" + "0" * 8 + "-0000-0000-0000-" + "0" * 12, 404),
    ):
        response = api_client.get(path)
        assert response.status_code == status
        assert response.json()["success"] is False and response.json()["statusCode"] == status


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_never_leave_an_older_body_behind(api_client, tokens):
    """Deposits and relay transactions recorded at once by eight threads: each writer reads its own change
    right after it committed, and at the end the body is what the rows say."""
    order = _new_order(api_client)
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def write(n: int) -> None:
        try:
            start.wait()
            if n % 2:
                _deposit(Order.objects.get(pk=order.pk), n, 1)
                mine = "0x" + f"{n:064x}"
                seen = [tx["txHash"] for tx in _read(api_client, order.pk)["depositTxs"]]
            else:
                mine = "0x" + f"{n:064x}"
                lifecycle.order_record_relay_txs(
                    order=Order.objects.get(pk=order.pk), txs=[(42161, mine, "pending")]
                )
                seen = [tx["txHash"] for tx in _read(api_client, order.pk)["relayTxs"]]
            assert mine in seen, f"writer {n} committed, then read a body without its change"
        except BaseException as exc:
            errors.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not errors, errors
    final = _read(api_client, order.pk)
    assert final == _built(order.pk)
    assert len(final["depositTxs"]) == 4 and len(final["relayTxs"]) == 4
