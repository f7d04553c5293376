"""Settings for the cross-chain checkout service.

One module, driven by environment variables. Development defaults are embedded
(SQLite under var/, a file-system Celery broker) so that `make run` works on a
machine that has only Python; production sets DATABASE_URL, REDIS_URL,
DJANGO_SECRET_KEY and ENCRYPTION_KEY.

Two switches, kept apart: SERVICE_ENV (`production` unless set; `development`
turns on the conveniences: an insecure default secret key, plain-HTTP
webhooks to localhost, console email, static files from the app folders) and
DJANGO_DEBUG (Django's debug pages, off unless asked for, development only).
"""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONCE as CSP_NONCE
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# --- Core -------------------------------------------------------------------

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

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]" if DEVELOPMENT else "")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
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
    "chains",
    "platform_api",
    "merchant",
    "audit",
    "orders",
    "quickpay",
    "webhooks",
    "checkout",
    "onramp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "platform_api.middleware.PlatformErrorMiddleware",
    "orders.middleware.OrderErrorMiddleware",
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
            ],
        },
    },
]

# --- Data stores ------------------------------------------------------------

VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        # Persistent connections, checked before reuse: a new PostgreSQL connection per request
        # costs more than the request itself.
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
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
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Auth, i18n, static -----------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
FORMAT_MODULE_PATH = ["config.formats"]  # dates with seconds, on one line, in the admin
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
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

# --- Sign-in to the admin (django-axes; core/signin.py) ----------------------

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses a locked-out address before the password is checked
    "django.contrib.auth.backends.ModelBackend",
]
ADMIN_SIGNIN_FAILURES_PER_IP = env_int("ADMIN_SIGNIN_FAILURES_PER_IP", 10)
ADMIN_SIGNIN_FAILURES_PER_ACCOUNT = env_int("ADMIN_SIGNIN_FAILURES_PER_ACCOUNT", 20)
ADMIN_SIGNIN_COOLOFF_MINUTES = env_int("ADMIN_SIGNIN_COOLOFF_MINUTES", 15)
AXES_HANDLER = "core.signin.SignInGuard"
AXES_FAILURE_LIMIT = ADMIN_SIGNIN_FAILURES_PER_IP
AXES_LOCKOUT_PARAMETERS = ["ip_address", ["username", "ip_address"]]
AXES_COOLOFF_TIME = timedelta(minutes=ADMIN_SIGNIN_COOLOFF_MINUTES)
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_CLIENT_IP_CALLABLE = "core.http.client_ip"  # the same client IP as everywhere (TRUSTED_PROXY_COUNT)
AXES_SENSITIVE_PARAMETERS = ["password"]
AXES_VERBOSE = False

# --- Security (production) ---------------------------------------------------

SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("DJANGO_BEHIND_TLS_PROXY", False) else None
)
if not DEVELOPMENT:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Every response carries a Content-Security-Policy (django-csp): nothing from another origin, no inline script
# or style but what carries the request's nonce (the hosted page's and widgets' own), no plugins, no <base>,
# forms only to this origin, and no framing but the widget page's (checkout/widget_page.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", CSP_NONCE],
        "style-src": ["'self'", CSP_NONCE],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# How many reverse proxies in front of the service append to X-Forwarded-For.
# 0 (default): the client IP is REMOTE_ADDR and X-Forwarded-For is ignored,
# because a payer could otherwise choose the IP we rate-limit and record.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

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

# --- REST framework and OpenAPI ---------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.inputs.StrictJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "platform_api.errors.platform_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "core.openapi.AutoSchema",
    # `?format=` is the exports' own parameter (csv or json), not DRF's renderer override.
    "URL_FORMAT_OVERRIDE": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Cross-chain checkout service",
    "DESCRIPTION": (
        "Order interface (`/orders`, `/checkout-sessions`, `/chains/...`, `/onramp/...`) with the envelope "
        "`{success, message, data, statusCode}`, and the merchant platform interface under `/api/v1` with "
        "Stripe-style errors `{error: {type, code, message, param}}`. Platform calls authenticate with "
        "`Authorization: Bearer svc_live_...` or `X-API-Key`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # What the path converters of core.inputs accept, stated for every path that uses them.
    "PATH_CONVERTER_OVERRIDES": {
        "public_id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
        "int64": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
    },
    "ENUM_NAME_OVERRIDES": {
        "PlatformErrorCodeEnum": "platform_api.serializers.ERROR_CODES",
        "PlatformErrorTypeEnum": "platform_api.serializers.ERROR_TYPES",
        "DiscountTypeEnum": ["percentage", "fixed"],
        # The `type` of each order type's request shape (a one-value enum), named after the type.
        **{
            "".join(part.capitalize() for part in t.split("_")) + "TypeEnum": [t]
            for t in (
                "swap",
                "x402_swap",
                "duel",
                "custom",
                "custom_exact_in",
                "mint_nft",
                "join_tournament",
                "fund_tournament",
            )
        },
        "OnrampVendorEnum": "orders.serializers.orders.ONRAMP_VENDORS",
        "OrderStatusEnum": "orders.models.Order.Status",
        "OrderTypeEnum": "orders.models.Order.Type",
        "CheckoutSessionStatusEnum": "orders.models.CheckoutSession.Status",
        "RelayTxStatusEnum": "orders.models.RelayTx.Status",
        "RefundTxStatusEnum": "orders.models.RefundTx.Status",
    },
}

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
CELERY_BEAT_SCHEDULE = {
    "audit-purge-expired-events": {
        "task": "audit.tasks.purge_expired_audit_events",
        "schedule": 3600.0,
    },
    "platform-purge-expired-idempotency-and-rate-limit-rows": {
        "task": "platform_api.tasks.purge_expired_platform_rows",
        "schedule": 600.0,
    },
    "platform-expire-quick-payments": {
        "task": "platform_api.tasks.expire_quick_payments",
        "schedule": 60.0,
    },
}

# --- Platform behaviour -----------------------------------------------------

PLATFORM_RATE_LIMIT_PER_MINUTE = env_int("PLATFORM_RATE_LIMIT_PER_MINUTE", 120)
QUICK_PAY_RATE_LIMIT_PER_MINUTE = env_int("QUICK_PAY_RATE_LIMIT_PER_MINUTE", 5)
# GET /quick-pay/{id}: a payer's page polls it.
QUICK_PAY_READ_RATE_LIMIT_PER_MINUTE = env_int("QUICK_PAY_READ_RATE_LIMIT_PER_MINUTE", 120)
ORDER_WRITE_RATE_LIMIT_PER_MINUTE = env_int("ORDER_WRITE_RATE_LIMIT_PER_MINUTE", 300)
# Checkouts started from the hosted page or a widget (each makes a session or an order with its own deposit
# address to watch), per client IP: a payer starts one or two; a script starting thousands is refused.
HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE = env_int("HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE", 10)
# Requests with an invalid, expired or revoked key, per client IP, on both interfaces.
AUTH_FAILURE_RATE_LIMIT_PER_MINUTE = env_int("AUTH_FAILURE_RATE_LIMIT_PER_MINUTE", 20)
IDEMPOTENCY_KEY_TTL_SECONDS = env_int("IDEMPOTENCY_KEY_TTL_SECONDS", 24 * 3600)
API_KEY_LAST_USED_RESOLUTION_SECONDS = 60
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 90)
AUDIT_PURGE_BATCH_SIZE = env_int("AUDIT_PURGE_BATCH_SIZE", 1000)
QUICK_PAY_TTL_SECONDS = env_int("QUICK_PAY_TTL_SECONDS", 15 * 60)

# Merchant resources: where payers reach the hosted checkout page (`{PUBLIC_BASE_URL}/pay/...`). In
# production it defaults to https:// and the first of DJANGO_ALLOWED_HOSTS.
_first_host = next((host for host in ALLOWED_HOSTS if host not in ("*",) and not host.startswith(".")), "")
PUBLIC_BASE_URL = os.environ.get(
    "PUBLIC_BASE_URL",
    f"http://127.0.0.1:{os.environ.get('PORT', '8000')}" if DEVELOPMENT else f"https://{_first_host}",
).rstrip("/")
CHECKOUT_SESSION_DEFAULT_TTL_SECONDS = env_int("CHECKOUT_SESSION_DEFAULT_TTL_SECONDS", 1800)

# Chains the service settles on (Ethereum, Optimism, BNB Chain, Polygon, Base,
# Arbitrum, Avalanche C-Chain, B3).
# `make run` starts the registry's devnets (anvil) in development unless DEVNET=0: Devnet A (31337) and
# Devnet B (31338), on DEVNET_PORTS. Orders may then use them too.
DEVNET = env_bool("DEVNET", DEVELOPMENT)
DEVNET_PORTS = [int(p) for p in env_list("DEVNET_PORTS", "8545,8546")]
DEVNET_CHAIN_IDS = [31337, 31338] if DEVNET else []
SUPPORTED_CHAIN_IDS = [int(c) for c in env_list("SUPPORTED_CHAIN_IDS", "1,10,56,137,8453,42161,43114,8333")]
SUPPORTED_CHAIN_IDS += [c for c in DEVNET_CHAIN_IDS if c not in SUPPORTED_CHAIN_IDS]
# One name for the chain-id enum of every field that takes a supported chain.
_enum_names = SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]
assert isinstance(_enum_names, dict)
_enum_names["SupportedChainIdEnum"] = [(c, c) for c in SUPPORTED_CHAIN_IDS]

# Deposit addresses are CREATE2 addresses of per-payment forwarders deployed on demand by the
# service's DepositFactory on each chain (chains/contracts; the forwarder's init-code hash comes from
# its compiled artifact). A chain takes payments only when the registry (CHAINS, below) names its
# factory. The devnets' factory is where a fresh devnet puts it: the first contract deployed by anvil's
# account 0. DEPOSIT_FACTORY_ADDRESS, when set, is the factory of every real chain of the default
# registry (the same deployer and nonce give the same address on every chain).
DEVNET_FACTORY_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
DEPOSIT_FACTORY_ADDRESS = os.environ.get("DEPOSIT_FACTORY_ADDRESS", "")
if DEPOSIT_FACTORY_ADDRESS and (
    not re.fullmatch(r"0x[0-9a-fA-F]{40}", DEPOSIT_FACTORY_ADDRESS) or int(DEPOSIT_FACTORY_ADDRESS, 16) == 0
):
    raise ImproperlyConfigured(
        "DEPOSIT_FACTORY_ADDRESS must be the address of the deployed DepositFactory (0x and 40 hex characters)."
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
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

# --- Order interface ----------------------------------------------------------

ORDER_LIFETIME_SECONDS = 15 * 60
# Above any payment: an amount worth more than this at its token's reference price is refused where it is sent
# (orders, quotes, links, products, sessions, widgets, quick pay), so that every figure derived from an amount
# (fees, points, USD totals) stays within its column.
MAX_PAYMENT_USD = env_int("MAX_PAYMENT_USD", 10**12)
ORDER_LIST_MAX_LIMIT = 100
TOKEN_LIST_FILE = BASE_DIR / "chains" / "data" / "tokens.json"

# The fee schedule, the discount tiers and points are business rules of the orders app (orders/fees.py).
# What a deployment chooses stays here: the discount token (B3 on Base) and the card service fee.
DISCOUNT_TOKEN_CHAIN_ID = env_int("DISCOUNT_TOKEN_CHAIN_ID", 8453)
DISCOUNT_TOKEN_ADDRESS = os.environ.get(
    "DISCOUNT_TOKEN_ADDRESS", "0xB3B32F9f8827D4634fE7d973Fa1034Ec9fdDB3B3"
)
# The service's fixed fee on card payments through vendorB, in USD (the vendor's own is in orders/fees.py).
CARD_SERVICE_FEE_USD = os.environ.get("CARD_SERVICE_FEE_USD", "0.00")

# External providers. "offline" prices from the token registry and reads balances as 0;
# "relay" / "rpc" call the real services.
QUOTE_PROVIDER = os.environ.get("QUOTE_PROVIDER", "offline")
RELAY_API_URL = os.environ.get("RELAY_API_URL", "https://api.relay.link")
RELAY_API_KEY = os.environ.get("RELAY_API_KEY", "")
# The service's signers (chains/signers.py): their public addresses here; their keys, VAULT_PRIVATE_KEY
# and SOLVER_PRIVATE_KEY, only in the worker processes' environment. The vault owns the deposit factories,
# receives sweeps and pays refunds; the solver stands in for the relay provider between the devnets.
# Development: anvil's accounts 0 (the devnet deployer) and 9, whose keys are anvil's public test keys.
VAULT_ADDRESS = os.environ.get(
    "VAULT_ADDRESS", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" if DEVELOPMENT else ""
)
SOLVER_ADDRESS = os.environ.get(
    "SOLVER_ADDRESS", "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720" if DEVELOPMENT else ""
)
# The deployer deploys the deposit factory (`manage.py chains deploy-factory`); by default the vault.
DEPLOYER_ADDRESS = os.environ.get("DEPLOYER_ADDRESS", "")
for _name, _address in (
    ("VAULT_ADDRESS", VAULT_ADDRESS),
    ("SOLVER_ADDRESS", SOLVER_ADDRESS),
    ("DEPLOYER_ADDRESS", DEPLOYER_ADDRESS),
):
    if _address and not re.fullmatch(r"0x[0-9a-fA-F]{40}", _address):
        raise ImproperlyConfigured(f"{_name} must be an address (0x and 40 hex characters).")
# How transactions are signed (chains/signers.py): "env" (keys in the signing worker's environment;
# development and tests only), "keystore" (Web3 Secret Storage files, passphrases read from files) or
# "remote" (a remote signer's eth_signTransaction over HTTP).
SIGNER_BACKEND = os.environ.get("SIGNER_BACKEND", "env" if DEVELOPMENT else "keystore")
if SIGNER_BACKEND not in ("env", "keystore", "remote"):
    raise ImproperlyConfigured("SIGNER_BACKEND must be env, keystore or remote.")
SIGNER_KEYSTORES = {
    role: (
        os.environ.get(f"{role.upper()}_KEYSTORE_FILE", ""),
        os.environ.get(f"{role.upper()}_PASSPHRASE_FILE", ""),
    )
    for role in ("vault", "solver", "deployer")
}
SIGNER_REMOTE_URL = os.environ.get("SIGNER_REMOTE_URL", "")
SIGNER_REMOTE_TOKEN = os.environ.get(
    "SIGNER_REMOTE_TOKEN", ""
)  # sent as a bearer token, when the signer asks one
SIGNER_REMOTE_TIMEOUT_SECONDS = float(os.environ.get("SIGNER_REMOTE_TIMEOUT_SECONDS", "10"))
if SIGNER_BACKEND == "remote" and not SIGNER_REMOTE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        "SIGNER_BACKEND=remote needs SIGNER_REMOTE_URL, the remote signer's http(s) URL."
    )
if not DEVELOPMENT:
    _plain_keys = [
        v for v in ("VAULT_PRIVATE_KEY", "SOLVER_PRIVATE_KEY", "DEPLOYER_PRIVATE_KEY") if os.environ.get(v)
    ]
    if SIGNER_BACKEND == "env" or _plain_keys:
        raise ImproperlyConfigured(
            "Production never reads a plain private key from the environment"
            + (f" (remove {', '.join(_plain_keys)})" if _plain_keys else "")
            + ": set SIGNER_BACKEND=keystore (<ROLE>_KEYSTORE_FILE and <ROLE>_PASSPHRASE_FILE) or "
            "SIGNER_BACKEND=remote (SIGNER_REMOTE_URL)."
        )
# The address that sends the relay transaction: the service's vault.
RELAY_QUOTE_USER = os.environ.get("RELAY_QUOTE_USER", VAULT_ADDRESS or "0x" + "0" * 40)
# Who delivers on the destination chain (orders/relays.py): "devnet" (the solver, between devnets only)
# or "relay" (the relay provider's HTTP API at RELAY_API_URL).
RELAY_PROVIDER = os.environ.get("RELAY_PROVIDER", "devnet" if DEVELOPMENT else "relay")
# Settlement re-prices what arrived; below the payer's expectedDstAmount less this tolerance it is refunded.
SETTLEMENT_SLIPPAGE_BPS = env_int("SETTLEMENT_SLIPPAGE_BPS", 100)
# How long a relay may take before the order is failed and refunded.
RELAY_TIMEOUT_SECONDS = env_int("RELAY_TIMEOUT_SECONDS", 600)
# How often orders waiting for the relay provider's fill ask it for their status.
RELAY_POLL_SECONDS = float(os.environ.get("RELAY_POLL_SECONDS", "2" if DEVNET else "5"))
CHAIN_READER = os.environ.get("CHAIN_READER", "offline")
# "1=https://rpc.example,8453=https://..." : one JSON-RPC URL per chain id.
CHAIN_RPC_URLS = {
    int(chain): url
    for chain, _, url in (item.partition("=") for item in env_list("CHAIN_RPC_URLS"))
    if chain.strip().isdigit() and url
}
# The seed of the chain registry (chains.Chain rows; chains/registry.py), imported after `migrate`: rows it
# created follow it, rows staff added or edited (admin, `manage.py chains`) are left alone. CHAINS, a JSON
# list of entries, replaces the default: in development the two devnets `make run` starts (ports from
# DEVNET_PORTS) beside the chains of the shipped token list, which have an RPC URL only when CHAIN_RPC_URLS
# gives one.
_KNOWN_CHAINS = {  # chain id: (name, native symbol, explorer)
    1: ("Ethereum", "ETH", "https://etherscan.io"),
    10: ("OP Mainnet", "ETH", "https://optimistic.etherscan.io"),
    56: ("BNB Smart Chain", "BNB", "https://bscscan.com"),
    137: ("Polygon", "POL", "https://polygonscan.com"),
    8333: ("B3", "ETH", "https://explorer.b3.fun"),
    8453: ("Base", "ETH", "https://basescan.org"),
    42161: ("Arbitrum One", "ETH", "https://arbiscan.io"),
    43114: ("Avalanche C-Chain", "AVAX", "https://snowtrace.io"),
}
if "CHAINS" in os.environ:
    try:
        CHAINS = json.loads(os.environ["CHAINS"])
    except ValueError as exc:
        raise ImproperlyConfigured(f"CHAINS is not JSON: {exc}") from None
else:
    CHAINS = (
        [
            {
                "chain_id": 31337 + n,
                "name": f"Devnet {'AB'[n]}",
                "native_symbol": "ETH",
                "devnet": True,
                "rpc_url": f"http://127.0.0.1:{port}",
                "confirmations": 1,
                "poll_interval_seconds": 1,
                "factory_address": DEVNET_FACTORY_ADDRESS,
                "max_fee_per_gas_gwei": 10,
            }
            for n, port in enumerate(DEVNET_PORTS[:2])
        ]
        if DEVNET
        else []
    )
    CHAINS += [
        {
            "chain_id": chain_id,
            **dict(
                zip(
                    ("name", "native_symbol", "explorer_url"),
                    _KNOWN_CHAINS.get(chain_id, (f"Chain {chain_id}", "ETH", "")),
                    strict=True,
                )
            ),
            "rpc_url": CHAIN_RPC_URLS.get(chain_id, ""),
            # The devnet factory exists on no real chain: a real one is named in CHAINS or DEPOSIT_FACTORY_ADDRESS.
            "factory_address": DEPOSIT_FACTORY_ADDRESS,
        }
        for chain_id in SUPPORTED_CHAIN_IDS
        if chain_id not in DEVNET_CHAIN_IDS
    ]
if not DEVELOPMENT and not VAULT_ADDRESS:
    raise ImproperlyConfigured(
        "VAULT_ADDRESS is not set: the vault (the owner of the deposit factories) receives every payment."
    )
# The deposit watcher (chains/watcher.py): how much one scan reads. A deposit goes to its owner's handler,
# registered in code (chains/handlers.py).
WATCHER_MAX_BLOCKS = env_int("WATCHER_MAX_BLOCKS", 500)
WATCHER_ADDRESSES_PER_QUERY = env_int("WATCHER_ADDRESSES_PER_QUERY", 500)
# Native coin is also seen by balance (a contract wallet pays by an internal call): addresses per
# eth_getBalance batch.
WATCHER_BALANCES_PER_BATCH = env_int("WATCHER_BALANCES_PER_BATCH", 500)
# A real chain's first scan starts this many blocks before its confirmed head.
WATCHER_FIRST_LOOKBACK_BLOCKS = env_int("WATCHER_FIRST_LOOKBACK_BLOCKS", 100)
# Reorgs deeper than a chain's confirmations: how far back the watcher and the outbox look again when the
# chain they read has changed (and what they check after each scan or poll), and how many blocks a deposit
# whose block was taken away may take to come back before it is withdrawn.
REORG_WINDOW_BLOCKS = env_int("REORG_WINDOW_BLOCKS", 64)
REORG_GRACE_BLOCKS = env_int("REORG_GRACE_BLOCKS", 10)
PROVIDER_TIMEOUT_SECONDS = float(os.environ.get("PROVIDER_TIMEOUT_SECONDS", "10"))
PROVIDER_MAX_RETRIES = env_int("PROVIDER_MAX_RETRIES", 2)
# A chain's RPC node that fails, serves another chain or lags is left out of its rotation this long
# (chains/client.py); it is still tried, last, when no other node answers.
RPC_SET_ASIDE_SECONDS = env_int("RPC_SET_ASIDE_SECONDS", 30)
QUOTE_SLIPPAGE_BPS = env_int("QUOTE_SLIPPAGE_BPS", 50)

# The transaction outbox (chains/outbox.py): how often in-flight transactions are looked at, when an
# unmined one is broadcast again, when its fee is raised (and by how much). A finished transaction goes to
# the handler of its key's kind, registered in code (chains/handlers.py).
OUTBOX_POLL_SECONDS = float(os.environ.get("OUTBOX_POLL_SECONDS", "1" if DEVNET else "10"))
OUTBOX_RESEND_AFTER_SECONDS = env_int("OUTBOX_RESEND_AFTER_SECONDS", 20)
OUTBOX_REBROADCAST_SECONDS = env_int("OUTBOX_REBROADCAST_SECONDS", 30)
OUTBOX_FEE_BUMP_SECONDS = env_int("OUTBOX_FEE_BUMP_SECONDS", 120)
OUTBOX_FEE_BUMP_PERCENT = env_int("OUTBOX_FEE_BUMP_PERCENT", 25)
# The most the outbox ever bids per gas, in gwei, on a chain whose registry entry names no cap of its own
# (`max_fee_per_gas_gwei`): fee bumps stop there, and staff are told.
OUTBOX_MAX_FEE_PER_GAS_GWEI = float(os.environ.get("OUTBOX_MAX_FEE_PER_GAS_GWEI", "200"))
# Test hook, honoured in development only: the outbox exits the process at this point ("before_sign",
# "after_sign", "after_broadcast"), as a killed worker would. The suite's kill-the-worker tests set it.
OUTBOX_CRASH_AT = os.environ.get("OUTBOX_CRASH_AT", "") if DEVELOPMENT else ""
# Settlement (orders/settlement.py): a step that has made no progress for this long is listed as stuck.
SETTLEMENT_STUCK_SECONDS = env_int("SETTLEMENT_STUCK_SECONDS", 300)
# A refund that failed moved nothing: it is tried again after this long, this many times in all.
REFUND_RETRY_SECONDS = env_int("REFUND_RETRY_SECONDS", 60)
REFUND_MAX_ATTEMPTS = env_int("REFUND_MAX_ATTEMPTS", 5)

CELERY_BEAT_SCHEDULE.update(
    {
        "chains-outbox-poll": {"task": "chains.tasks.outbox_poll", "schedule": OUTBOX_POLL_SECONDS},
        "orders-settle-stuck": {"task": "orders.tasks.settle_stuck_orders", "schedule": 60.0},
        # The relay provider's fills are asked for: it tells nothing by itself.
        "orders-poll-relays": {"task": "orders.tasks.poll_relays", "schedule": RELAY_POLL_SECONDS},
        "orders-expire-checkout-sessions": {
            "task": "orders.tasks.expire_checkout_sessions",
            "schedule": 60.0,
        },
        "checkout-expire-sessions": {"task": "checkout.tasks.expire_sessions", "schedule": 60.0},
        "orders-expire-unpaid-orders": {"task": "orders.tasks.expire_unpaid_orders", "schedule": 60.0},
        "chains-retry-deposit-handlers": {"task": "chains.tasks.retry_deposit_handlers", "schedule": 60.0},
    }
)
# The chains are rows (chains.Chain, seeded from CHAINS): one dispatcher sends each chain's scan when its poll
# interval has passed, so a chain added or edited at run time is scanned without restarting beat.
WATCHER_DISPATCH_SECONDS = float(os.environ.get("WATCHER_DISPATCH_SECONDS", "1"))
CELERY_BEAT_SCHEDULE["chains-scan-due"] = {
    "task": "chains.tasks.scan_due_chains",
    "schedule": WATCHER_DISPATCH_SECONDS,
    "options": {"expires": WATCHER_DISPATCH_SECONDS * 5},
}

# --- Webhooks -----------------------------------------------------------------

# 32 bytes, URL-safe base64: encrypts secrets at rest (webhook endpoint secrets, stored idempotent
# responses). Required in production. WEBHOOK_SECRET_KEY is its earlier name and still read.
ENCRYPTION_KEY = os.environ.get("ENCRYPTION_KEY") or os.environ.get("WEBHOOK_SECRET_KEY", "")
if not ENCRYPTION_KEY and not DEVELOPMENT:
    raise ImproperlyConfigured(
        "ENCRYPTION_KEY must be set in production: 32 random bytes, URL-safe base64 "
        '(python -c "import base64,os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())").'
    )
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
# Plain HTTP to localhost / 127.0.0.1 / ::1 (and loopback addresses) only in development.
WEBHOOK_ALLOW_LOCALHOST = env_bool("WEBHOOK_ALLOW_LOCALHOST", DEVELOPMENT)
WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZATION = env_int("WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZATION", 20)

CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_ROUTES = {
    "webhooks.tasks.deliver_webhook": {"queue": CELERY_WEBHOOK_QUEUE},
    "webhooks.tasks.send_notification_email": {"queue": CELERY_WEBHOOK_QUEUE},
}
# Merchants' notification emails: retried after these delays (seconds) on an SMTP failure, then failed.
NOTIFICATION_RETRY_DELAYS = [int(s) for s in env_list("NOTIFICATION_RETRY_DELAYS", "60,300,1800,7200")]
CELERY_BEAT_SCHEDULE["webhooks-sweep-due-deliveries"] = {
    "task": "webhooks.tasks.sweep_due_deliveries",
    "schedule": float(WEBHOOK_SWEEP_INTERVAL_SECONDS),
}
CELERY_BEAT_SCHEDULE["webhooks-sweep-due-notifications"] = {
    "task": "webhooks.tasks.sweep_due_notifications",
    "schedule": float(WEBHOOK_SWEEP_INTERVAL_SECONDS),
}

# --- Fiat onramp ----------------------------------------------------------------

# vendorA: hosted buy flow. Base URLs and an API key (id + PEM private key, EC P-256 or Ed25519).
VENDOR_A_API_URL = os.environ.get("VENDOR_A_API_URL", "")
VENDOR_A_PAY_URL = os.environ.get("VENDOR_A_PAY_URL", "")
VENDOR_A_KEY_ID = os.environ.get("VENDOR_A_KEY_ID", "")
VENDOR_A_PRIVATE_KEY = os.environ.get("VENDOR_A_PRIVATE_KEY", "").replace("\\n", "\n")
VENDOR_A_JWT_ISSUER = os.environ.get("VENDOR_A_JWT_ISSUER", "cdp")
VENDOR_A_JWT_TTL_SECONDS = 120
# vendorB: card payments (payment intents, form-encoded API).
VENDOR_B_API_URL = os.environ.get("VENDOR_B_API_URL", "")
VENDOR_B_SECRET_KEY = os.environ.get("VENDOR_B_SECRET_KEY", "")
# Signs vendorB's payment-intent webhooks (POST /onramp/vendorB/webhook); a signature older than the
# tolerance is refused, so a captured delivery cannot be replayed later.
VENDOR_B_WEBHOOK_SECRET = os.environ.get("VENDOR_B_WEBHOOK_SECRET", "")
VENDOR_B_WEBHOOK_TOLERANCE_SECONDS = env_int("VENDOR_B_WEBHOOK_TOLERANCE_SECONDS", 300)
# Where vendorB works: ISO countries, minus ISO 3166-2 regions; and the card amount limits in USD.
EU_COUNTRIES = "AT,BE,BG,HR,CY,CZ,DK,EE,FI,FR,DE,GR,HU,IE,IT,LV,LT,LU,MT,NL,PL,PT,RO,SK,SI,ES,SE"
VENDOR_B_SUPPORTED_COUNTRIES = env_list("VENDOR_B_SUPPORTED_COUNTRIES", "US," + EU_COUNTRIES)
VENDOR_B_EXCLUDED_REGIONS = env_list("VENDOR_B_EXCLUDED_REGIONS", "US-HI")
VENDOR_B_MIN_USD = os.environ.get("VENDOR_B_MIN_USD", "1.00")
VENDOR_B_MAX_USD = os.environ.get("VENDOR_B_MAX_USD", "10000.00")
# Geolocation of the caller: a country (and region) header set by a trusted edge
# (e.g. a CDN), or a GeoLite2-City format database file. Neither: unknown location.
GEOLOCATION_COUNTRY_HEADER = os.environ.get("GEOLOCATION_COUNTRY_HEADER", "")
GEOLOCATION_REGION_HEADER = os.environ.get("GEOLOCATION_REGION_HEADER", "")
GEOIP_DATABASE_PATH = os.environ.get("GEOIP_DATABASE_PATH", "")
