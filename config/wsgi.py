import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from checkout.status_fastpath import StatusNotModified  # noqa: E402 - after Django is set up

# The hosted page's unchanged status polls are answered from Redis before Django (a surge's bulk).
application = StatusNotModified(application)
