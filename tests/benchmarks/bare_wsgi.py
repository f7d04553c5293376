"""The references of `make bench` (tests/benchmarks/bare_urls.py), on the service's own settings and middleware."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings
from django.core.wsgi import get_wsgi_application

settings.ROOT_URLCONF = "tests.benchmarks.bare_urls"
application = get_wsgi_application()
