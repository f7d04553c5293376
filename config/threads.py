"""GIL hand-off for the thread-pooled processes (gunicorn gthread workers, the webhook worker).

Their threads spend most of their time waiting on PostgreSQL, Redis or a
receiver; each wait gives up the GIL, and getting it back means waiting for
the thread that holds it to yield. CPython makes that thread yield every 5 ms
by default, so with many busy threads every round trip could cost up to 5 ms
of waiting: that halved web throughput and slowed webhook fan-out in
`make bench`. A 0.5 ms interval hands the GIL back quickly; the extra
switches cost less than the waits they save.
"""

import os
import sys

SWITCH_INTERVAL_SECONDS = float(os.environ.get("PYTHON_SWITCH_INTERVAL", "0.0005"))


def tune_thread_switching() -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
