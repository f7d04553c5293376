import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# No `SELECT 1` before each request's first query: a read on a lost connection is run again (core.dbretry).
os.environ.setdefault("DATABASE_CONN_HEALTH_CHECKS", "0")
application = get_wsgi_application()

from checkout.status_fastpath import StatusNotModified  # noqa: E402 - after Django is set up

# The hosted page's unchanged status polls are answered from Redis before Django (a surge's bulk).
application = StatusNotModified(application)
