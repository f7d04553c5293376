from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from config.celery import app as celery_app

# The suite chooses its databases itself: the commands it runs never adopt what `make run` recorded.
os.environ["MANAGE_USES_RUN_SETTINGS"] = "0"
from tests.devnets import (  # noqa: F401 (fixtures)
    anvil,
    devnet,
    devnet_registry,
    devnets_registry,
    two_devnets,
    worker_env,
)
from tests.factories import OrganizationFactory, make_api_key


@pytest.fixture(scope="session", autouse=True)
def _catalogs_compiled():
    """The translation catalogs as `make test` compiles them, for a run of pytest alone too."""
    from core.locales import compile_catalogs

    compile_catalogs(settings.BASE_DIR)


@pytest.fixture(scope="session", autouse=True)
def _every_chain_takes_payments():
    """Tests pay on the shipped list's chains (Base, ...) as if the service's factory were deployed there.

    A chain takes payments only when the registry names its factory; development
    names one for the devnets only. Servers and workers the tests start inherit it.
    """
    from django.test import override_settings

    factory = settings.DEVNET_FACTORY_ADDRESS
    chains = [
        {**chain, "factory_address": chain.get("factory_address") or factory} for chain in settings.CHAINS
    ]
    previous = os.environ.get("DEPOSIT_FACTORY_ADDRESS")
    os.environ["DEPOSIT_FACTORY_ADDRESS"] = factory
    with override_settings(CHAINS=chains, DEPOSIT_FACTORY_ADDRESS=factory):
        yield
    if previous is None:
        os.environ.pop("DEPOSIT_FACTORY_ADDRESS")
    else:
        os.environ["DEPOSIT_FACTORY_ADDRESS"] = previous


_registry_follows_settings = [True]


@pytest.fixture(scope="session", autouse=True)
def _registry_rows_follow_settings_chains():
    """The chain registry is rows; the suite's tests set `settings.CHAINS` to say which chains exist. The rows
    become exactly those at the registry's first read after a change (and at each test's start)."""
    from django.core.signals import setting_changed

    from chains import registry

    original = registry._registry

    def _registry():
        if _registry_follows_settings[0]:
            _registry_follows_settings[0] = False
            registry.chains_seed(settings.CHAINS, replace=True)
        return original()

    def changed(*, setting, enter, **kwargs):
        if setting != "CHAINS":
            return
        _registry_follows_settings[0] = True
        registry.registry_forget()
        if enter:  # at once, where the database may be used: workers the test starts read the rows
            try:
                registry.chains_seed(settings.CHAINS, replace=True)
            except Exception:  # no database access here, or an entry the test expects to be refused
                return
            _registry_follows_settings[0] = False

    registry._registry = _registry
    setting_changed.connect(changed, weak=False, dispatch_uid="tests.registry_follows_settings")
    yield
    setting_changed.disconnect(dispatch_uid="tests.registry_follows_settings")
    registry._registry = original


@pytest.fixture(autouse=True)
def _registry_from_settings_at_each_test(request, monkeypatch):
    """Each test starts with the rows of `settings.CHAINS`, read before the test runs (a test counting its
    queries counts its own), and this process rechecks them only when told (tests that check the recheck
    set REGISTRY_RECHECK_SECONDS themselves)."""
    from chains import registry

    monkeypatch.setattr(registry, "REGISTRY_RECHECK_SECONDS", 3600.0)
    _registry_follows_settings[0] = True
    registry.registry_forget()
    marker = request.node.get_closest_marker("django_db")
    if marker is not None or {"db", "transactional_db"} & set(request.fixturenames):
        transactional = "transactional_db" in request.fixturenames or bool(
            marker and marker.kwargs.get("transaction")
        )
        request.getfixturevalue("transactional_db" if transactional else "db")
        registry.chains()
    yield
    registry.registry_forget()


@pytest.fixture(autouse=True)
def _no_tokens_kept_from_another_test():
    """A test's tokens roll back with it, which no signal tells token_get's per-process cache."""
    from chains.tokens import tokens_forget
    from checkout.display import display_tokens_forget

    tokens_forget()
    display_tokens_forget()
    yield


@pytest.fixture(autouse=True)
def _isolated_rate_limits():
    """Rate-limit counters and cached records must not leak between tests (Redis keeps them across the run)."""
    if settings.REDIS_URL:
        from platform_api.ratelimit import _redis_client

        client = _redis_client()
        # and what Redis caches
        for pattern in ("ratelimit:*", "apikey:*", "checkout:status:*", "checkout:views*"):
            for key in client.scan_iter(pattern):
                client.delete(key)
    yield


@pytest.fixture
def shared_redis(settings):
    """A Redis shared by every process (the suite's, or the local one in the embedded pass), with nothing
    cached in it yet: for what the service keeps there. Skips where no Redis answers. The embedded pass uses
    database 11, not CI's PostgreSQL pass's 15, so the two passes may run side by side (.ci/run)."""
    import redis

    url = settings.REDIS_URL or "redis://127.0.0.1:6379/11"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
    except redis.exceptions.ConnectionError:
        pytest.skip(f"no Redis at {url}")
    settings.REDIS_URL = url
    client = redis.Redis.from_url(url)
    for pattern in ("apikey:*", "ratelimit:*", "checkout:status:*", "checkout:views*"):
        for key in client.scan_iter(pattern):
            client.delete(key)
    return client


@pytest.fixture
def tokens(db):
    """The shipped token list, as `make run` loads it."""
    from chains.tokens import token_list_load

    token_list_load(settings.TOKEN_LIST_FILE)


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def organization(db):
    return OrganizationFactory(slug="acme")


@pytest.fixture
def admin_key(organization):
    return make_api_key(organization, permissions=["admin"], name="admin")


@pytest.fixture
def admin_client(admin_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {admin_key[1]}")
    return client


@pytest.fixture
def admin_user(admin_user):
    """pytest-django's superuser (`admin`, `password`), with an authenticator: the admin asks for its code."""
    from django_otp.plugins.otp_totp.models import TOTPDevice

    TOTPDevice.objects.create(user=admin_user, name="authenticator", confirmed=True)
    return admin_user


def staff_code(user) -> str:
    """The code the user's authenticator shows now (as a new one: each is accepted once)."""
    from django_otp.oath import totp
    from django_otp.plugins.otp_totp.models import TOTPDevice

    TOTPDevice.objects.filter(user=user).update(last_t=-1, throttling_failure_timestamp=None)
    device = TOTPDevice.objects.get(user=user, confirmed=True)
    return f"{totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits):06d}"


def staff_verified(client, user) -> None:
    """`client` signed in as `user` and verified by their authenticator, as the admin's sign-in leaves it."""
    from django_otp import DEVICE_ID_SESSION_KEY
    from django_otp.plugins.otp_totp.models import TOTPDevice

    client.force_login(user)
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = TOTPDevice.objects.get(user=user, confirmed=True).persistent_id
    session.save()


def admin_sign_in(page, base_url: str, user, password: str = "password") -> None:  # noqa: S107 - pytest-django's admin
    """A browser signs in to the admin as `user`: password and the authenticator's current code."""
    page.goto(f"{base_url}/admin/login/")
    page.fill("#id_username", user.get_username())
    page.fill("#id_password", password)
    page.fill("#id_otp_token", staff_code(user))
    page.click("input[type=submit]")


@pytest.fixture
def staff(admin_user):
    """A browser session of a superuser signed in with their second factor, for the admin."""
    from django.test import Client

    client = Client()
    staff_verified(client, admin_user)
    return client


def client_for(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


def _database_url_for_subprocess() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


# Every task this test session sends, from app code too, goes to a queue of its own,
# which only the workers started below consume: parallel runs and a developer's
# `make run` never take each other's messages.
TEST_QUEUE = f"test-{uuid.uuid4().hex[:12]}"
TEST_WEBHOOK_QUEUE = f"{TEST_QUEUE}-webhooks"
celery_app.conf.task_default_queue = TEST_QUEUE
celery_app.conf.task_routes = {
    "webhooks.tasks.deliver_webhook": {"queue": TEST_WEBHOOK_QUEUE},
    "webhooks.tasks.deliver_event_webhooks": {"queue": TEST_WEBHOOK_QUEUE},
}


class WorkerProcess:
    """A real `celery worker` subprocess reading the test database."""

    def __init__(self, pool: str = "solo", concurrency: int = 1, **env: str):
        self.queue = TEST_QUEUE
        root = Path(__file__).resolve().parent.parent
        self.log_path = root / "var" / f"worker-{uuid.uuid4().hex[:8]}.log"
        self.log = open(self.log_path, "w+")  # noqa: SIM115 - closed in stop()
        environment = {
            **os.environ,
            "DATABASE_URL": _database_url_for_subprocess(),
            "SERVICE_ENV": "development",
            "CELERY_TASK_DEFAULT_QUEUE": TEST_QUEUE,
            "CELERY_WEBHOOK_QUEUE": TEST_WEBHOOK_QUEUE,
            **env,
        }
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                f"--pool={pool}",
                f"--concurrency={concurrency}",
                "-Q",
                f"{TEST_QUEUE},{TEST_WEBHOOK_QUEUE}",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel=INFO",
            ],
            cwd=root,
            env=environment,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def kill(self) -> None:
        """SIGKILL: the worker dies mid-task, as on an OOM kill or a lost machine."""
        self.process.kill()
        self.process.wait(timeout=20)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.seek(0)
        output = self.log.read()
        self.log.close()
        self.log_path.unlink(missing_ok=True)
        return output


@pytest.fixture
def start_worker(transactional_db):
    """Start real workers (`start_worker(SETTING="value")`); all are stopped after the test."""
    workers: list[WorkerProcess] = []

    def start(pool: str = "solo", concurrency: int = 1, **env: str) -> WorkerProcess:
        worker = WorkerProcess(pool, concurrency, **env)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        output = worker.stop()
        if "Traceback" in output or os.environ.get("TEST_WORKER_LOG"):
            print(output)


@pytest.fixture
def celery_worker(start_worker):
    """One real worker with default settings; the value is the queue it consumes."""
    return start_worker().queue


def queued_work(callbacks: list) -> list:
    """The on-commit callbacks that do work (tasks, messages), without the metrics' observations."""
    return [
        callback
        for callback in callbacks
        if not getattr(getattr(callback, "func", callback), "__module__", "").startswith(
            ("observability.", "prometheus_client.")
        )
    ]


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):
    """Poll until `predicate()` is truthy; returns its value or fails the test."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"condition not met within {timeout} seconds")


@contextlib.contextmanager
def locked_elsewhere(model, pk, *, hold: float = 20.0):
    """Within: the row `pk` of `model` is locked FOR UPDATE by another database connection (another process,
    say, in the middle of changing it), for at most `hold` seconds. Skips the test on a database without row
    locks (SQLite, where one process writes at a time)."""
    import threading

    from django.db import connection, transaction

    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip("the database locks no rows (SQLite): one process writes at a time")
    taken, done = threading.Event(), threading.Event()

    def another_process():
        try:
            with transaction.atomic():
                model.objects.select_for_update().get(pk=pk)
                taken.set()
                done.wait(hold)
        finally:
            connection.close()

    holder = threading.Thread(target=another_process)
    holder.start()
    assert taken.wait(10), "the other connection did not take the lock"
    try:
        yield
    finally:
        done.set()
        holder.join()


@pytest.fixture
def browser_page(monkeypatch):
    """A page of Debian's Chromium driven by Playwright, phone-sized; skipped where either is missing."""
    import shutil

    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
    chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    if not shutil.which(chromium):
        pytest.skip(f"no Chromium at {chromium} (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=1)  # a phone
        yield page
        browser.close()


# `.ci/run` runs the suite on both backends side by side on two cores. On the second (SQLite and the file
# broker), TESTS_DATABASE_ONLY=1 leaves out what the backend cannot change and the first run already ran: the
# browser tests (Playwright drives the same pages and scripts whatever stores their rows; the rules they rest
# on are tested by the rest of the suite on both backends), the chain tests that use no database (anvil nodes
# and contracts only) and those that start servers on their own SQLite database (`own_stack`) without the
# suite's. `make test` alone runs everything.
def _backend_blind(item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    if "browser_page" in names:
        return True
    uses_database = bool(names & {"db", "transactional_db", "django_db_reset_sequences", "live_server"})
    uses_database = uses_database or item.get_closest_marker("django_db") is not None
    own = "anvil" in names or item.get_closest_marker("own_stack") is not None
    return own and not uses_database and item.get_closest_marker("worker") is None


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TESTS_DATABASE_ONLY") != "1":
        return
    kept, left = [], []
    for item in items:
        (left if _backend_blind(item) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(autouse=True)
def _reconciled_after_the_flow(request):
    """TESTS_RECONCILE=1: every test on the two devnets starts the ledger afresh at what the chains hold and
    ends with `reconcile` finding no difference on either: what moved in the test, the ledger booked. The end
    is checked before the test's settings are undone, once the chains' last blocks are confirmed and scanned
    and beat's ledger tasks have run, as they would in a running service. A test that makes a difference on
    purpose (what reconcile exists to find) says so with `@pytest.mark.unreconciled("why")`."""
    if (
        os.environ.get("TESTS_RECONCILE") != "1"
        or "devnets_registry" not in request.fixturenames
        or request.node.get_closest_marker("unreconciled") is not None
    ):
        return
    import io

    from django.core.management import call_command

    request.getfixturevalue("devnets_registry")
    if "db" not in request.fixturenames and "transactional_db" not in request.fixturenames:
        request.getfixturevalue("db")
    call_command("reconcile", "--open-devnets", stdout=io.StringIO(), stderr=io.StringIO())
    request.addfinalizer(_reconcile_clean)


def _reconcile_clean() -> None:
    from chains.client import web3_for
    from chains.registry import chain_get
    from chains.watcher import scan_chain
    from ledger.reconcile import compare
    from orders.settlement import relay_refunds_post

    present = [
        chain_id for chain_id in (31337, 31338) if chain_get(chain_id) is not None
    ]  # a test may keep one
    for chain_id in present:
        chain = chain_get(chain_id)
        web3_for(chain).provider.make_request("anvil_mine", [hex(chain.confirmations + 1)])
        scan_chain(chain_id)  # what arrived in the test is confirmed and recorded, as the watcher would
    relay_refunds_post()  # beat's: the provider's refunds into the vault, once their chain shows them
    differences = []
    for chain_id in present:
        _, _, rows = compare(chain_id)
        differences += [
            (chain_id, row.kind, row.address, row.token, row.difference) for row in rows if row.difference
        ]
    assert differences == [], "reconcile after the flow"
