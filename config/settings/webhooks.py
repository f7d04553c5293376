"""Webhook deliveries and merchants' notification emails."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings.django import DEVELOPMENT
from config.settings.env import env_bool, env_int, env_list

# Total deadline of one attempt: name lookup, connect, TLS, sending and the response's head.
WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOK_TIMEOUT_SECONDS", "30"))
WEBHOOK_CONNECT_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOK_CONNECT_TIMEOUT_SECONDS", "5"))
# Attempts made inside a web request (test pings, manual retries) answer within 10 s.
WEBHOOK_SYNC_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOK_SYNC_TIMEOUT_SECONDS", "8"))
# Seconds to wait after each failed attempt: three retries, then `failed`.
WEBHOOK_RETRY_DELAYS = [int(s) for s in env_list("WEBHOOK_RETRY_DELAYS", "60,600,3600")]
WEBHOOK_AUTO_DISABLE_AFTER = env_int("WEBHOOK_AUTO_DISABLE_AFTER", 10)
# An attempt in flight holds its delivery this long; if the worker dies, the sweep retries after it.
# It must outlast the attempt's deadline, so that a live attempt is never handed to a second worker.
WEBHOOK_DELIVERY_LEASE_SECONDS = env_int("WEBHOOK_DELIVERY_LEASE_SECONDS", int(WEBHOOK_TIMEOUT_SECONDS) + 60)
if WEBHOOK_DELIVERY_LEASE_SECONDS < WEBHOOK_TIMEOUT_SECONDS + 10:
    raise ImproperlyConfigured(
        "WEBHOOK_DELIVERY_LEASE_SECONDS must exceed WEBHOOK_TIMEOUT_SECONDS by 10 s or more."
    )
# At most this many attempts to one endpoint at once (one while its last attempt failed), so that a
# slow receiver holds a few delivery threads, never the pool; a busy endpoint's next delivery waits.
WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = env_int("WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT", 4)
WEBHOOK_BUSY_RETRY_SECONDS = env_int("WEBHOOK_BUSY_RETRY_SECONDS", 2)
# A thread whose attempt succeeded goes on with its endpoint's next due delivery for at most this long,
# then hands the slot on through the broker, so that one busy endpoint cannot keep it from the others.
WEBHOOK_DRAIN_SECONDS = float(os.environ.get("WEBHOOK_DRAIN_SECONDS", "10"))
# How many of its endpoint's deliveries such a thread claims at a time (then sends one after the other).
WEBHOOK_DRAIN_BATCH = env_int("WEBHOOK_DRAIN_BATCH", 32)
# Deliveries run on their own queue, consumed by a thread-pool worker (see README, "Running").
CELERY_WEBHOOK_QUEUE = os.environ.get("CELERY_WEBHOOK_QUEUE", "webhooks")
# After a rotation the previous secret keeps signing this long, beside the new one.
WEBHOOK_SECRET_ROTATION_OVERLAP_SECONDS = env_int("WEBHOOK_SECRET_ROTATION_OVERLAP_SECONDS", 24 * 3600)
WEBHOOK_SWEEP_INTERVAL_SECONDS = env_int("WEBHOOK_SWEEP_INTERVAL_SECONDS", 15)
# Webhook events (GET /api/v1/webhook-events), their deliveries and attempts are kept this many days, then
# deleted by an hourly task.
WEBHOOK_EVENT_RETENTION_DAYS = env_int("WEBHOOK_EVENT_RETENTION_DAYS", 30)
# The longest a `GET /api/v1/webhook-events/listen` waits for an event (its `wait`, up to 25): each waiting
# listener holds one web thread.
WEBHOOK_LISTEN_MAX_WAIT_SECONDS = env_int("WEBHOOK_LISTEN_MAX_WAIT_SECONDS", 25)
# How many listeners may wait at once: in one web process (a quarter of its threads, WEB_THREADS, so that
# the payers' pages and the API are always answered), per API key and per organization across the
# deployment (in the shared cache). Beyond: 429, with Retry-After.
WEBHOOK_LISTEN_PER_PROCESS = env_int("WEBHOOK_LISTEN_PER_PROCESS", max(1, env_int("WEB_THREADS", 8) // 4))
# Resends (POST /api/v1/webhook-events/{id}/resend) an hour: of one event to one endpoint, and of anything to
# one endpoint. Beyond: 429.
WEBHOOK_RESENDS_PER_EVENT = env_int("WEBHOOK_RESENDS_PER_EVENT", 5)
WEBHOOK_RESENDS_PER_ENDPOINT = env_int("WEBHOOK_RESENDS_PER_ENDPOINT", 60)
WEBHOOK_LISTEN_PER_KEY = env_int("WEBHOOK_LISTEN_PER_KEY", 2)
WEBHOOK_LISTEN_PER_ORGANIZATION = env_int("WEBHOOK_LISTEN_PER_ORGANIZATION", 4)
# Plain HTTP to localhost / 127.0.0.1 / ::1 (and loopback addresses) only in development.
WEBHOOK_ALLOW_LOCALHOST = env_bool("WEBHOOK_ALLOW_LOCALHOST", DEVELOPMENT)
WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZATION = env_int("WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZATION", 20)
# Merchants' notification emails: retried after these delays (seconds) on an SMTP failure, then failed.
NOTIFICATION_RETRY_DELAYS = [int(s) for s in env_list("NOTIFICATION_RETRY_DELAYS", "60,300,1800,7200")]
