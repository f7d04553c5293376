"""Celery: the broker (Redis, or files under var/ when there is none), task routing, and beat's one
schedule of every periodic task."""

from __future__ import annotations

import os

from config.settings.chains import OUTBOX_POLL_SECONDS, OUTBOX_RECEIPT_POLL_SECONDS
from config.settings.django import REDIS_URL
from config.settings.env import VAR_DIR
from config.settings.orders import RELAY_POLL_SECONDS
from config.settings.webhooks import CELERY_WEBHOOK_QUEUE, WEBHOOK_SWEEP_INTERVAL_SECONDS

# --- Celery -----------------------------------------------------------------

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or REDIS_URL or "filesystem://"
if CELERY_BROKER_URL == "filesystem://":
    # A broker that needs no server: messages are files under var/celery/, written atomically (config/brokers.py).
    CELERY_BROKER_TRANSPORT = "config.brokers:AtomicFilesystemTransport"
    _celery_dir = VAR_DIR / "celery" / "queue"
    _celery_dir.mkdir(parents=True, exist_ok=True)
    (VAR_DIR / "celery" / "control").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_celery_dir),
        "data_folder_out": str(_celery_dir),
        # Broadcast exchanges (worker control) too, or kombu writes them to ./control.
        "control_folder": str(VAR_DIR / "celery" / "control"),
        "store_processed": False,
        # How often an idle worker looks for a new message file (kombu's default, 1 s, is added to every hop
        # of a settlement: deposit, sweep, relay, call).
        "polling_interval": 0.1,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Beat runs on every node and sends on one: the holder of a lock (config/beat.py) in the shared Redis (a file
# lock under VAR_DIR without one). A holder that dies is replaced within 4/3 of BEAT_LOCK_TTL_SECONDS.
CELERY_BEAT_SCHEDULER = "config.beat:LockedScheduler"
BEAT_LOCK_TTL_SECONDS = float(os.environ.get("BEAT_LOCK_TTL_SECONDS", "10"))
CELERY_BEAT_SCHEDULE = {
    "audit-purge-expired-events": {
        "task": "audit.tasks.purge_expired_audit_events",
        "schedule": 3600.0,
    },
    "platform-purge-expired-idempotency-and-rate-limit-rows": {
        "task": "platform_api.tasks.purge_expired_platform_rows",
        "schedule": 600.0,
    },
    "quickpay-expire-payments": {
        "task": "quickpay.tasks.expire_quick_payments",
        "schedule": 60.0,
    },
    # Refunds: the unfunded past REFUND_FUNDING_SECONDS are canceled; those whose money may still move are
    # settled again (a lost task's work is found within the minute).
    "refunds-expire": {"task": "refunds.tasks.expire_refunds", "schedule": 60.0},
    "refunds-resume": {"task": "refunds.tasks.resume_refunds", "schedule": 60.0},
}
CELERY_BEAT_SCHEDULE.update(
    {
        "chains-outbox-poll": {"task": "chains.tasks.outbox_poll", "schedule": OUTBOX_POLL_SECONDS},
        "orders-settle-stuck": {"task": "orders.tasks.settle_stuck_orders", "schedule": 60.0},
        # The relay provider's fills are asked for: it tells nothing by itself.
        "orders-poll-relays": {"task": "orders.tasks.poll_relays", "schedule": RELAY_POLL_SECONDS},
        # The solver's inventories: refills asked below the low mark, and followed to their fill.
        "orders-refill-inventories": {
            "task": "orders.tasks.refill_inventories",
            "schedule": RELAY_POLL_SECONDS,
        },
        # Every checkout session, whichever interface made it (the one session: checkout.models).
        "checkout-expire-sessions": {"task": "checkout.tasks.expire_sessions", "schedule": 60.0},
        # The hosted and widget pages' views, buffered in Redis (checkout/visits.py): stats lag by this much.
        "checkout-flush-views": {
            "task": "checkout.tasks.flush_views",
            "schedule": float(os.environ.get("VIEWS_FLUSH_SECONDS", "5")),
            "options": {"expires": 30},
        },
        "orders-expire-unpaid-orders": {"task": "orders.tasks.expire_unpaid_orders", "schedule": 60.0},
        "chains-retry-deposit-handlers": {"task": "chains.tasks.retry_deposit_handlers", "schedule": 60.0},
    }
)
if OUTBOX_RECEIPT_POLL_SECONDS > 0:  # receipts alone, between full outbox polls (chains/outbox/poll.py)
    CELERY_BEAT_SCHEDULE["chains-outbox-receipts"] = {
        "task": "chains.tasks.outbox_receipts",
        "schedule": OUTBOX_RECEIPT_POLL_SECONDS,
        "options": {"expires": max(OUTBOX_RECEIPT_POLL_SECONDS * 4, 2)},
    }
# The chains are rows (chains.Chain, seeded from CHAINS): one dispatcher sends each chain's scan when its poll
# interval has passed, so a chain added or edited at run time is scanned without restarting beat. Twice a
# second, so a chain polled at a fraction of its block time (0.5 s for 2 s blocks) is scanned that often.
WATCHER_DISPATCH_SECONDS = float(os.environ.get("WATCHER_DISPATCH_SECONDS", "0.5"))
CELERY_BEAT_SCHEDULE["chains-scan-due"] = {
    "task": "chains.tasks.scan_due_chains",
    "schedule": WATCHER_DISPATCH_SECONDS,
    "options": {"expires": WATCHER_DISPATCH_SECONDS * 5},
}

# The ledger against the chains (ledger/reconcile.py): a difference is logged at ERROR and shown to staff.
RECONCILE_INTERVAL_SECONDS = float(os.environ.get("RECONCILE_INTERVAL_SECONDS", "3600"))
if RECONCILE_INTERVAL_SECONDS > 0:
    CELERY_BEAT_SCHEDULE["ledger-reconcile"] = {
        "task": "ledger.tasks.reconcile_chains",
        "schedule": RECONCILE_INTERVAL_SECONDS,
        "options": {"expires": RECONCILE_INTERVAL_SECONDS},
    }

CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
# The chains' own work (scans, signing and sending, receipts) may have a queue and workers of its own, so a
# backlog of settlements never delays seeing a deposit or sending a delivery; by default it shares the queue.
CELERY_CHAIN_QUEUE = os.environ.get("CELERY_CHAIN_QUEUE", CELERY_TASK_DEFAULT_QUEUE)
CELERY_TASK_ROUTES = {
    "webhooks.tasks.deliver_webhook": {"queue": CELERY_WEBHOOK_QUEUE},
    "webhooks.tasks.deliver_event_webhooks": {"queue": CELERY_WEBHOOK_QUEUE},
    "webhooks.tasks.send_notification_email": {"queue": CELERY_WEBHOOK_QUEUE},
    **{
        f"chains.tasks.{task}": {"queue": CELERY_CHAIN_QUEUE}
        for task in (
            "scan_due_chains",
            "scan_chain_deposits",
            "outbox_send_task",
            "outbox_finish_task",
            "outbox_included_task",
            "outbox_receipts",
            "outbox_poll",
        )
    },
}
CELERY_BEAT_SCHEDULE["webhooks-sweep-due-deliveries"] = {
    "task": "webhooks.tasks.sweep_due_deliveries",
    "schedule": float(WEBHOOK_SWEEP_INTERVAL_SECONDS),
}
CELERY_BEAT_SCHEDULE["webhooks-purge-expired-events"] = {
    "task": "webhooks.tasks.purge_expired_webhook_events",
    "schedule": 3600.0,
}
CELERY_BEAT_SCHEDULE["webhooks-sweep-due-notifications"] = {
    "task": "webhooks.tasks.sweep_due_notifications",
    "schedule": float(WEBHOOK_SWEEP_INTERVAL_SECONDS),
}
