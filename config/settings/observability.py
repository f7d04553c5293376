"""Metrics and logs (docs/operations.md, "Metrics, alerts and logs").

METRICS_DIR turns on prometheus-client's multiprocess mode: every process of one node (gunicorn's
workers, each Celery worker and its children) writes its samples to files under
`METRICS_DIR/<METRICS_ROLE>/`, and `/metrics` sums them all. `make run` sets it (var/metrics); a
deployment sets it to a directory its roles share (a volume in deploy/compose.yaml). Unset, each process
keeps its own samples and `/metrics` shows only the process that answers the scrape.

prometheus-client reads PROMETHEUS_MULTIPROC_DIR when it is first imported, so it is set here, before any
application module is loaded.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from config.settings.env import env_list

METRICS_DIR = os.environ.get("METRICS_DIR", "")
# Which process this is, for its samples' directory: web, worker, webhooks-1, beat... (set by each role's
# command; anything else is "main").
METRICS_ROLE = re.sub(r"[^a-z0-9_-]", "", os.environ.get("METRICS_ROLE", "main").lower())[:40] or "main"
os.environ.setdefault("PROMETHEUS_DISABLE_CREATED_SERIES", "True")  # no `_created` twin of every series
if METRICS_DIR:  # (a role's own, whatever a parent process had set)
    _own = Path(METRICS_DIR) / METRICS_ROLE
    _own.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(_own)

# Who may scrape `/metrics`: addresses or networks (CIDR), as the connection's address (REMOTE_ADDR, or the
# trusted proxy's hop; core.http.client_ip). Loopback only unless set: never public by default.
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", "127.0.0.1/32,::1/128")
# A scrape reads a few aggregates from the database; past this it answers without them.
METRICS_DATABASE_TIMEOUT_MS = int(os.environ.get("METRICS_DATABASE_TIMEOUT_MS", "2000"))

# LOG_FORMAT=json: one JSON object per line (observability/logs.py), with the request, organization,
# order and task ids of what the line is about. Anything else: plain text lines.
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain").strip().lower()
