"""A real Prometheus (Debian's) scrapes `make run`'s supervisor while an order is paid on the devnets; its
HTTP API then answers the service's series, summed over the web and worker processes, and loads the alert
rules. The run's JSON logs carry no secret the test made or knows."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
import requests

from chains.devnet import devnet_signer_environment, example_swap_order
from tests.test_supervise import ANVIL, _free_port

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = shutil.which("prometheus")
pytestmark = [
    pytest.mark.skipif(PROMETHEUS is None, reason="no prometheus (Debian: apt-get install prometheus)"),
    pytest.mark.skipif(not ANVIL.exists(), reason="no anvil (make install): no devnets to pay on"),
    # It starts a service of its own on SQLite whatever the suite's database: once per CI run is enough.
    pytest.mark.skipif(
        os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="runs in the SQLite suite only (its service has a database of its own)",
    ),
]


def _http(url: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict]:
    if body is None:
        response = requests.get(url, headers=headers, timeout=10)
    else:
        response = requests.post(url, json=body, headers=headers, timeout=10)
    return response.status_code, response.json() if response.content else {}


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout:.0f} s: {what}")


def test_prometheus_scrapes_a_paying_service_and_loads_the_alerts(tmp_path):
    port, prometheus_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "SERVICE_ENV": "development",
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": "",
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "",
        "DEVNET_PORTS": f"{_free_port()},{_free_port()}",
        "LOG_FORMAT": "json",
        "MANAGE_USES_RUN_SETTINGS": "0",
    }
    for name in ("DJANGO_DEBUG", "METRICS_DIR", "PROMETHEUS_MULTIPROC_DIR", "METRICS_ROLE"):
        env.pop(name, None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=180)
    output = tmp_path / "service.log"
    service = subprocess.Popen(
        [sys.executable, "-m", "config.supervise", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=output.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    prometheus = None
    base = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: "The service is up at" in output.read_text(), 180, "the service is up")
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: [{ROOT / 'deploy' / 'prometheus' / 'alerts.yml'}]\n"
            "scrape_configs:\n"
            f"  - {{job_name: checkout, static_configs: [{{targets: ['127.0.0.1:{port}']}}]}}\n"
        )
        prometheus = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={tmp_path / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{prometheus_port}",
            ],
            stdout=(tmp_path / "prometheus.log").open("w"),
            stderr=subprocess.STDOUT,
        )

        key = subprocess.run(
            [*manage, "create_api_key", "--org", "acme", "--name", "prom", "--permissions", "admin"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.split()[-1]
        status, hook = _http(
            f"{base}/api/v1/webhooks",
            {"url": f"http://127.0.0.1:{_free_port()}/hook", "events": ["*"]},
            {"Authorization": f"Bearer {key}"},
        )
        assert status == 201, hook
        status, created = _http(f"{base}/orders", example_swap_order(), {"X-Request-ID": "prom-test-order"})
        assert status == 200, created
        order_id = created["data"]["id"]
        subprocess.run([*manage, "pay_order", order_id], cwd=ROOT, env=env, check=True, timeout=60)
        _until(
            lambda: _http(f"{base}/orders/{order_id}")[1]["data"]["order"]["status"] == "executed",
            120,
            "the order is executed",
        )

        def query(expression: str) -> list[dict]:
            url = f"http://127.0.0.1:{prometheus_port}/api/v1/query?" + urllib.parse.urlencode(
                {"query": expression}
            )
            try:
                return _http(url)[1].get("data", {}).get("result", [])
            except requests.RequestException:
                return []

        def one(expression: str) -> float:
            found = _until(lambda: query(expression), 60, expression)
            return float(found[0]["value"][1])

        assert one('up{job="checkout"}') == 1
        assert one("checkout_metrics_database_up") == 1
        # Counted by the worker processes, summed by the web's /metrics.
        assert one('sum(checkout_order_transitions_total{to_status="executed"}) >= 1') >= 1
        assert one('sum(checkout_order_settlement_duration_seconds_count{outcome="executed"}) >= 1') >= 1
        assert one('sum(checkout_rpc_requests_total{chain_id="31337"}) > 0') > 0
        assert one('sum(checkout_http_requests_total{method="POST", status="200"}) >= 1') >= 1
        assert one('checkout_watcher_lag_blocks{chain_id="31337"}') >= 0
        rules = _http(f"http://127.0.0.1:{prometheus_port}/api/v1/rules")[1]["data"]["groups"]
        loaded = [rule for group in rules for rule in group["rules"]]
        assert len(loaded) == 11 and all(rule["health"] == "ok" for rule in loaded), loaded
        firing = {alert["labels"]["alertname"] for alert in query("ALERTS")}
        assert not firing & {"ChainUnreachable", "ReconciliationDifference", "MetricsDatabaseDown"}
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(timeout=20)
        service.terminate()
        try:
            service.wait(timeout=60)
        except subprocess.TimeoutExpired:
            service.kill()

    log = output.read_text()
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert any(r["logger"] == "gunicorn.access" and "prom-test-order" in r["message"] for r in records)
    assert any(r["logger"].startswith("orders") and r.get("task_id") for r in records)
    assert not [line for line in log.splitlines() if re.match(r"\[?\d{4}-\d\d-\d\d[ T]", line)]
    secrets = [key, hook["data"]["secret"]]
    secrets += [k.removeprefix("0x") for k in devnet_signer_environment().values()]
    secrets.append("dev-insecure-secret-key-do-not-use-in-production")
    assert [secret[:12] for secret in secrets if secret in log] == []
