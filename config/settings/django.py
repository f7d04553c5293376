"""Django itself: the two switches (SERVICE_ENV, DJANGO_DEBUG), apps, middleware, templates, the
database and cache, static files, email, logging."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.settings.env import BASE_DIR, VAR_DIR, env_bool, env_int, env_list
from config.settings.observability import LOG_FORMAT
from core.locales import available_languages, locale_dir

# Django's debug pages (tracebacks, URL lists): off unless asked for, and never in production.
DEBUG = env_bool("DJANGO_DEBUG", False)
# wsgi and Celery start in production mode unless told otherwise; `make run`, `make test`
# and manage.py (when no DJANGO_SECRET_KEY is set) say development.
SERVICE_ENV = os.environ.get("SERVICE_ENV", "development" if DEBUG else "production").strip().lower()
if SERVICE_ENV not in ("development", "production"):
    raise ImproperlyConfigured("SERVICE_ENV must be 'development' or 'production'.")
DEVELOPMENT = SERVICE_ENV == "development"
if DEBUG and not DEVELOPMENT:
    raise ImproperlyConfigured(
        "DJANGO_DEBUG shows tracebacks to anyone: it is for SERVICE_ENV=development only."
    )

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEVELOPMENT:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set in production (for development, set SERVICE_ENV=development "
            "or use `make run`)."
        )
    SECRET_KEY = "dev-insecure-secret-key-do-not-use-in-production-0123456789abcdef"  # noqa: S105

# A node whose code is not the version the shared database was last migrated by refuses to start
# (core/cluster.py). Off in development, where the code changes under a running database all day.
CLUSTER_CHECK_CODE_VERSION = env_bool("CLUSTER_CHECK_CODE_VERSION", not DEVELOPMENT)

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]" if DEVELOPMENT else "")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "config.admin_apps.StaffAdminConfig",  # django.contrib.admin, its site asking staff for a second factor
    "config.apps.ServiceConfig",  # the top layer's commands (manage.py wiring)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "core",
    "chains",
    "platform_api",
    "ledger",
    "merchant",
    "audit",
    "orders",
    "quickpay",
    "webhooks",
    "checkout",
    "refunds",
    "facilitator",
    "onramp",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "dashboard",
    "observability",
]

MIDDLEWARE = [
    # First: every request's id (X-Request-ID, in and out, and in its log lines) and its metrics.
    "observability.middleware.RequestObservation",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",  # request.user.is_verified(): the dashboard's second factor
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "platform_api.middleware.PlatformErrorMiddleware",
    "orders.middleware.OrderErrorMiddleware",
    # The last view hook: it calls the view itself, to run a read again on a lost connection.
    "core.dbretry.RetryReadOnLostConnection",
    # Last, as django-axes asks: it answers a locked-out sign-in with 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "config" / "templates"],  # the API docs' pages, under the CSP
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "checkout.languages.languages",
            ],
        },
    },
]

# --- Data stores ------------------------------------------------------------

VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        # Persistent connections: a new PostgreSQL connection per request costs more than the request
        # itself. Checked before reuse, except in the web process (config/gunicorn_conf.py), where a read that
        # finds its connection dead is run again instead (core.dbretry).
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let the web server, worker and beat share one file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not memory, so that a real Celery worker started by the tests sees the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
# `shared`: short-lived values every process of the deployment must see alike (an x402 link's version 1 offers
# until their payer answers them): Redis, or, with the embedded defaults (one machine), files under VAR_DIR.
CACHES: dict[str, dict[str, object]]
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL},
        "shared": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "shared",
        },
    }
else:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "shared": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "shared-cache"),
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        },
    }

# --- Auth, i18n, static -----------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The payer's pages and emails are in English or in a language with a catalog under locale/ (core/locales.py),
# chosen per request from `?lang=`, the language cookie or Accept-Language (checkout/languages.py).
LANGUAGE_CODE = "en"
LANGUAGES = available_languages(BASE_DIR)
LOCALE_PATHS = [locale_dir(BASE_DIR)]
LANGUAGE_COOKIE_NAME = "pay_language"
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
FORMAT_MODULE_PATH = ["config.formats"]  # dates with seconds, on one line, in the admin
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# The container image collects them into itself at build (STATIC_ROOT=/app/staticfiles), apart from VAR_DIR.
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or VAR_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "config" / "static"]  # the admin's own stylesheet
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEVELOPMENT
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
# Serve static files from the finders in development so no collectstatic is needed.
WHITENOISE_USE_FINDERS = DEVELOPMENT
# Files served at the site's root, such as /favicon.ico, which browsers ask for on every page.
WHITENOISE_ROOT = BASE_DIR / "config" / "public"

# --- Email ------------------------------------------------------------------

EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if DEVELOPMENT
    else "django.core.mail.backends.smtp.EmailBackend",
)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "no-reply@checkout.localhost")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)

# Request bodies above this are refused with 413 by both interfaces (the largest legitimate one is an
# order with 8 KB of metadata).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("REQUEST_BODY_MAX_BYTES", 1024 * 1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"ids": {"()": "observability.logs.ContextFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "observability.logs.JsonLines"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "plain",
            "filters": ["ids"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        # web3.py logs each request's URL at DEBUG: an RPC provider's URL carries its key.
        "web3": {"level": "INFO"},
        "urllib3": {"level": "INFO"},
        # A request naming another Host is refused (400 in the interface's envelope); Django would also log
        # it as an ERROR with a traceback, for every scanner on the internet.
        "django.security.DisallowedHost": {"handlers": [], "level": "CRITICAL", "propagate": False},
        # Routine chatter, several lines a second with the chain scans and outbox polls: each task received
        # and succeeded, each beat tick. A task that fails still logs (ERROR), and the services log what
        # changes state (a deposit, a transaction, an order's step) at INFO. TASK_LOG_LEVEL=INFO shows all.
        **{
            name: {"level": os.environ.get("TASK_LOG_LEVEL", "WARNING")}
            for name in ("celery.app.trace", "celery.worker.strategy", "celery.beat")
        },
    },
}
