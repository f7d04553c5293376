"""`/metrics`: who may read it, what it counts as things happen, what it reads from the database, and that a
scrape answers while the database does not."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from chains.models import Incident, OutboxTx
from observability.multiprocess import NodeCollector
from orders import lifecycle
from orders.models import Order
from tests.factories import (
    ChainCursorFactory,
    ChainFactory,
    IncidentFactory,
    OrderFactory,
    OutboxTxFactory,
    ReconcileRunFactory,
)

ROOT = Path(__file__).resolve().parents[2]


def scrape(client, **extra) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.django_db
def test_only_the_allowed_networks_may_scrape(client, settings):
    assert client.get("/metrics").status_code == 200  # the test client comes from 127.0.0.1
    refused = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 404
    assert b"checkout_" not in refused.content and refused.json()["statusCode"] == 404
    settings.METRICS_ALLOWED_NETWORKS = ["203.0.113.0/24"]
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 200
    assert client.get("/metrics").status_code == 404  # loopback is no longer listed
    assert client.post("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 405


@pytest.mark.django_db
def test_requests_are_counted_by_route_name_never_by_path(client):
    before = scrape(client)
    client.get("/healthz")
    client.get("/api/v1/payment-links/plink_does_not_exist")  # unauthenticated: 401
    client.get("/no/such/page/0x1234")
    after = scrape(client)
    healthz = {"route": "healthz", "method": "GET", "status": "200"}
    assert (
        value(after, "checkout_http_requests_total", **healthz)
        == value(before, "checkout_http_requests_total", **healthz) + 1
    )
    routes = {dict(labels).get("route") for name, labels in after if name == "checkout_http_requests_total"}
    assert not any("0x1234" in route or "plink_" in route for route in routes)
    assert value(after, "checkout_http_request_duration_seconds_count", route="healthz", method="GET") >= 1


@pytest.mark.django_db(transaction=True)
def test_an_orders_transitions_and_settlement_time_are_counted_once_committed(client):
    order = OrderFactory(type=Order.Type.SWAP, status=Order.Status.SCANNING_DEPOSIT)
    Order.objects.filter(pk=order.pk).update(status_changed_at=timezone.now() - timedelta(seconds=40))
    stage = {
        "type": "swap",
        "from_status": "scanning_deposit_transaction",
        "to_status": "quoting_after_deposit",
    }
    before = scrape(client)
    lifecycle.order_transition(
        order,
        from_statuses=[Order.Status.SCANNING_DEPOSIT],
        to_status=Order.Status.QUOTING_AFTER_DEPOSIT,
        received_deposit_at=timezone.now() - timedelta(seconds=3),
    )
    # A transition rolled back is not counted.
    with pytest.raises(RuntimeError), connection.cursor():
        from django.db import transaction

        with transaction.atomic():
            lifecycle.order_transition(
                order,
                from_statuses=[Order.Status.QUOTING_AFTER_DEPOSIT],
                to_status=Order.Status.SENDING_TOKEN_FROM_VAULT,
            )
            raise RuntimeError("rolled back")
    for to_status in (Order.Status.SENDING_TOKEN_FROM_VAULT, Order.Status.RELAY, Order.Status.EXECUTED):
        order.refresh_from_db()
        assert lifecycle.order_transition(order, from_statuses=[order.status], to_status=to_status)
    after = scrape(client)
    assert (
        value(after, "checkout_order_transitions_total", **stage)
        == value(before, "checkout_order_transitions_total", **stage) + 1
    )
    spent = value(after, "checkout_order_stage_duration_seconds_sum", **stage) - value(
        before, "checkout_order_stage_duration_seconds_sum", **stage
    )
    assert 40 <= spent < 60  # the 40 s it waited for its deposit
    to_vault = {
        "type": "swap",
        "from_status": "quoting_after_deposit",
        "to_status": "sending_token_from_vault",
    }
    assert (
        value(after, "checkout_order_transitions_total", **to_vault)
        == value(before, "checkout_order_transitions_total", **to_vault) + 1
    )  # once: the rolled-back move is not counted
    settled = {"type": "swap", "outcome": "executed"}
    assert (
        value(after, "checkout_order_settlement_duration_seconds_count", **settled)
        == value(before, "checkout_order_settlement_duration_seconds_count", **settled) + 1
    )
    took = value(after, "checkout_order_settlement_duration_seconds_sum", **settled) - value(
        before, "checkout_order_settlement_duration_seconds_sum", **settled
    )
    assert 3 <= took < 30


@pytest.mark.django_db
def test_the_money_paths_state_is_read_at_each_scrape(client):
    chain = ChainFactory(rpc_urls=["http://127.0.0.1:1/a", "http://127.0.0.1:2/b"])
    cid = chain.chain_id
    chain.vault_gas_threshold = 10**17
    chain.save()
    ChainCursorFactory(
        chain_id=cid,
        head=120,
        scanned_to=100,
        last_scan_at=timezone.now() - timedelta(seconds=30),
        gas={"vault": str(5 * 10**16), "solver": str(10**18)},
    )
    OrderFactory(type=Order.Type.MINT_NFT, status=Order.Status.RELAY)
    OrderFactory(type=Order.Type.MINT_NFT, status=Order.Status.RELAY)
    OrderFactory(type=Order.Type.SWAP, status=Order.Status.EXECUTED)
    old = OutboxTxFactory(chain_id=cid, signer="solver", status=OutboxTx.Status.BROADCAST)
    OutboxTx.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(minutes=10))
    OutboxTxFactory(chain_id=cid, signer="vault", status=OutboxTx.Status.FAILED)
    OutboxTxFactory(chain_id=cid, signer="vault", status=OutboxTx.Status.MINED)
    IncidentFactory(kind=Incident.Kind.FEE_CAP)
    IncidentFactory(kind=Incident.Kind.FEE_CAP, resolved_at=timezone.now())
    ReconcileRunFactory(chain_id=cid, created_at=timezone.now() - timedelta(hours=2))
    ReconcileRunFactory(
        chain_id=cid,
        differences=1,
        rows=[{"kind": "solver", "token": "dUSDC", "actual": "1000000", "expected": "1000001"}],
    )

    found = scrape(client)
    assert value(found, "checkout_metrics_database_up") == 1
    assert value(found, "checkout_orders_open", status="relay", type="mint_nft") == 2
    assert value(found, "checkout_orders_open", status="executed", type="swap") == 0  # ended: not open
    assert (
        value(found, "checkout_outbox_transactions", chain_id=str(cid), signer="solver", status="broadcast")
        == 1
    )
    assert (
        value(found, "checkout_outbox_transactions", chain_id=str(cid), signer="vault", status="failed") == 1
    )
    assert (
        590
        < value(found, "checkout_outbox_oldest_in_flight_seconds", chain_id=str(cid), signer="solver")
        < 700
    )
    assert value(found, "checkout_watcher_lag_blocks", chain_id=str(cid)) == 20
    assert 29 < value(found, "checkout_watcher_lag_seconds", chain_id=str(cid)) < 90
    assert value(found, "checkout_rpc_nodes", chain_id=str(cid)) == 2
    assert value(found, "checkout_signer_gas_wei", chain_id=str(cid), signer="vault") == 5 * 10**16
    assert value(found, "checkout_signer_gas_threshold_wei", chain_id=str(cid), signer="vault") == 10**17
    assert value(found, "checkout_incidents_open", kind="fee_cap") == 1
    assert value(found, "checkout_reconcile_differences", chain_id=str(cid)) == 1
    assert value(found, "checkout_inventory_balance", chain_id=str(cid), token="dUSDC") == 1_000_000
    last_clean = value(found, "checkout_reconcile_last_clean_timestamp_seconds", chain_id=str(cid))
    assert abs(last_clean - (timezone.now() - timedelta(hours=2)).timestamp()) < 60
    # No label carries an unbounded value.
    for _name, labels in found:
        for label, text in labels:
            assert not text.startswith("0x") and len(text) <= 100, (label, text)


@pytest.mark.django_db(transaction=True)
def test_a_scrape_answers_while_the_database_does_not(client):
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "postgresql":
        connection.settings_dict["PORT"] = "1"  # nothing listens there: the connection is refused
    else:
        connection.settings_dict["NAME"] = "/nonexistent/directory/db.sqlite3"
    try:
        found = scrape(client)
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
    assert value(found, "checkout_metrics_database_up") == 0
    assert ("checkout_orders_open", ()) not in found
    assert any(name == "checkout_http_requests_total" for name, _ in found)  # the processes' counts still


def test_every_roles_processes_are_summed(tmp_path):
    """Two processes of two roles count into their own directories; one exposition sums them."""
    program = (
        "from prometheus_client import Counter\n"
        "c = Counter('checkout_test_things', 'Things.', ['kind'])\n"
        "c.labels('a').inc(2)\n"
    )
    for role in ("web", "worker"):
        own = tmp_path / role
        own.mkdir()
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(own)}
        subprocess.run([sys.executable, "-c", program], env=env, check=True, cwd=ROOT)
    merged = {
        sample.name: sample.value
        for family in NodeCollector(tmp_path).collect()
        for sample in family.samples
        if sample.labels.get("kind") == "a"
    }
    assert merged == {"checkout_test_things_total": 4.0}
