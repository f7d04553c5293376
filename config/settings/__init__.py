"""Settings for the cross-chain checkout service, one module per topic.

Driven by environment variables. Development defaults are embedded (SQLite
under var/, a file-system Celery broker) so that `make run` works on a machine
that has only Python; production sets DATABASE_URL, REDIS_URL,
DJANGO_SECRET_KEY and ENCRYPTION_KEY.

Two switches, kept apart: SERVICE_ENV (`production` unless set; `development`
turns on the conveniences: an insecure default secret key, plain-HTTP
webhooks to localhost, console email, static files from the app folders) and
DJANGO_DEBUG (Django's debug pages, off unless asked for, development only).

The fee schedule is the operator's (config/settings/orders.py, applied by
`orders/fees.py`); points stay constants of the orders app. What a deployment
chooses is here, by topic, each module importing what it needs of the ones
before it.
"""

from config.settings.celery import *  # noqa: F403
from config.settings.chains import *  # noqa: F403
from config.settings.django import *  # noqa: F403
from config.settings.env import BASE_DIR, VAR_DIR  # noqa: F401
from config.settings.observability import *  # noqa: F403  # first: prometheus-client reads its directory at import
from config.settings.onramp import *  # noqa: F403
from config.settings.orders import *  # noqa: F403
from config.settings.platform import *  # noqa: F403
from config.settings.security import *  # noqa: F403
from config.settings.webhooks import *  # noqa: F403
