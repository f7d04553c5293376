"""The service's Prometheus metrics that code updates as things happen (counters and histograms).

What is read from the database when Prometheus scrapes (orders open, the outbox, watchers, signers' gas,
inventory, incidents, reconciliation, queues) is in `observability.collector`. No label carries an
unbounded value: route names, not paths; statuses, types, chain ids and node hosts, never ids or addresses.
Every name starts with `checkout_`.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

# Seconds: from a cache hit to a slow page.
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# Seconds: a settlement step takes from one block to minutes.
STAGE_BUCKETS = (0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600)

http_requests = Counter(
    "checkout_http_requests",
    "HTTP requests answered, by the route's name, method and status code.",
    ["route", "method", "status"],
)
http_duration = Histogram(
    "checkout_http_request_duration_seconds",
    "Time to answer an HTTP request, by the route's name and method.",
    ["route", "method"],
    buckets=HTTP_BUCKETS,
)
order_transitions = Counter(
    "checkout_order_transitions",
    "Orders moved from one status to another, by type and the two statuses.",
    ["type", "from_status", "to_status"],
)
order_stage_duration = Histogram(
    "checkout_order_stage_duration_seconds",
    "Time an order spent in a status before it moved on (deposit confirmed -> swept -> delivered -> "
    "executed), by type and the two statuses.",
    ["type", "from_status", "to_status"],
    buckets=STAGE_BUCKETS,
)
order_settlement_duration = Histogram(
    "checkout_order_settlement_duration_seconds",
    "Time from an order's confirmed deposit to its end (executed or refunded), by type and end.",
    ["type", "outcome"],
    buckets=STAGE_BUCKETS,
)
webhook_attempts = Counter(
    "checkout_webhook_attempts",
    "Webhook delivery attempts, by outcome (success, http_error, timeout, connection_error).",
    ["outcome"],
)
webhook_attempt_duration = Histogram(
    "checkout_webhook_attempt_duration_seconds",
    "Time a webhook attempt took, from its start to the receiver's answer (or the deadline).",
    ["outcome"],
    buckets=HTTP_BUCKETS,
)
rpc_requests = Counter(
    "checkout_rpc_requests",
    "JSON-RPC requests (or batches) sent to a chain's node, by chain and node (scheme and host).",
    ["chain_id", "node"],
)
rpc_failures = Counter(
    "checkout_rpc_failures",
    "JSON-RPC requests a node failed (no answer, an error it is at fault for, another chain), by chain and node.",
    ["chain_id", "node"],
)
outbox_finished = Counter(
    "checkout_outbox_finished",
    "Outbox transactions finished, by chain, signer and outcome (mined, failed).",
    ["chain_id", "signer", "status"],
)
