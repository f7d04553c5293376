"""Gunicorn settings, one file for `make run`, `make bench` and production.

    gunicorn -c config/gunicorn_conf.py config.wsgi:application

Threads (gthread) so that a slow client holds a thread, not a process; each
worker process hands the GIL between its threads quickly (config/threads.py).
"""

import os

from config import server_errors
from config.threads import tune_thread_switching

server_errors.install()  # in the master, before the workers fork: gunicorn's own errors are JSON too
# No `SELECT 1` before each request's first query: a read that finds its connection lost is run again on a
# new one instead (core.dbretry). Set here, before Django's settings are read in the master.
os.environ.setdefault("DATABASE_CONN_HEALTH_CHECKS", "0")
os.environ.setdefault("METRICS_ROLE", "web")  # its samples' directory under METRICS_DIR

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "8"))
backlog = 2048
keepalive = 5
graceful_timeout = 10
control_socket_disable = True  # gunicorn >= 25 would otherwise open a control socket beside the app
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None
if os.environ.get("LOG_FORMAT", "").strip().lower() == "json":
    # gunicorn's own lines (its errors and the access log) as JSON lines too, with the request's id; the
    # access line without the client's address or the query string (personal data, search terms).
    access_log_format = "%(m)s %(U)s %(s)s %(B)s %(M)sms %({x-request-id}o)s"
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "observability.logs.JsonLines"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
        "loggers": {
            "gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
            "gunicorn.access": {"handlers": ["console"], "level": "INFO", "propagate": False},
        },
    }
# Gunicorn's largest request line (its default is 4094), so that a long URL reaches Django, which answers
# it in the interface's envelope; past that, gunicorn's own 414 is JSON too (config/server_errors.py).
limit_request_line = 8190


def on_starting(server):
    """Before the workers fork: a web node that would split the cluster (core/cluster.py) does not start.
    gunicorn prints a RuntimeError's message and exits 1."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.db import connections

    from core.cluster import ClusterSplit, check_node
    from observability.multiprocess import clear_own_directory

    clear_own_directory()  # before any worker forks and counts
    try:
        check_node("web")
    except ClusterSplit as exc:
        raise RuntimeError(str(exc)) from None
    finally:
        connections.close_all()  # no worker inherits the master's connection


def child_exit(server, worker):
    """A worker process gone: its live gauges go with it (its counters stay counted)."""
    from observability.multiprocess import process_exited

    process_exited(worker.pid)


def post_fork(server, worker):
    tune_thread_switching()
