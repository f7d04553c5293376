"""The image's health check: the web role answers /readyz; the other roles are alive while their process is
(the container's own state)."""

import os
import sys
import urllib.request

if os.environ.get("METRICS_ROLE", "web") != "web":
    sys.exit(0)
port = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000").rsplit(":", 1)[1]
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
        sys.exit(0 if response.status == 200 else 1)
except OSError:
    sys.exit(1)
