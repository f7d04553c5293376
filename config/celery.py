import os

from celery import Celery
from celery.signals import beat_init, worker_init, worker_ready

from config.threads import tune_thread_switching

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("checkout")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
import observability.tasks  # noqa: E402,F401 - the request id carried into tasks, and the tasks' log ids


@worker_init.connect
def _tune_thread_switching(**_):
    tune_thread_switching()  # the webhook worker runs deliveries on a thread pool


@worker_init.connect  # in the main process, before the pool forks and any of it counts
def _clear_metrics(**_):
    from observability.multiprocess import clear_own_directory

    clear_own_directory()


@worker_init.connect
def _join_cluster(**_):
    _check_node("worker")


@worker_init.connect  # in the main process, before the pool forks: every child inherits the unlocked keys
def _unlock_keystores(**_):
    from chains.signers import unlock_keystores

    unlock_keystores()


@beat_init.connect  # also sent for a beat embedded in a worker (-B)
def _join_cluster_as_beat(sender, **_):
    """Beat runs on every node, and sends on the one holding the lock (config/beat.py): a beat with another
    scheduler would send beside it, so it refuses to start."""
    from celery.utils.imports import symbol_by_name

    from config.beat import LockedScheduler

    scheduler = getattr(sender, "scheduler_cls", None) or app.conf.beat_scheduler
    if isinstance(scheduler, str):
        scheduler = symbol_by_name(scheduler)
    if not (isinstance(scheduler, type) and issubclass(scheduler, LockedScheduler)):
        raise SystemExit(
            f"this beat refuses to start: its scheduler ({scheduler!r}) does not take the deployment's beat "
            "lock, so it would send every periodic task beside the beat that holds it; start it without -S "
            "(CELERY_BEAT_SCHEDULER is config.beat:LockedScheduler)"
        )
    _check_node("beat")


def _check_node(role: str) -> None:
    """A node that would split the cluster (core/cluster.py) stops here, its reason on standard error."""
    from core.cluster import ClusterSplit, check_node

    try:
        check_node(role)
    except ClusterSplit as exc:
        raise SystemExit(str(exc)) from None


@worker_ready.connect
def _resume_lost_work(sender, **_):
    """A worker that consumes the default queue starts by driving every settlement in flight: a task the
    previous worker held when it was killed is found now, not when the minute's stuck-order sweep next
    counts it as stuck (5 minutes)."""
    from django.conf import settings

    consumed = set(sender.app.amqp.queues.consume_from or sender.app.amqp.queues)
    if settings.CELERY_TASK_DEFAULT_QUEUE in consumed:
        for task in (
            "orders.tasks.resume_settlements",
            "quickpay.tasks.resume_quick_payments",
            "refunds.tasks.resume_refunds",
        ):
            sender.app.send_task(task, queue=settings.CELERY_TASK_DEFAULT_QUEUE)


@worker_ready.connect
def _tell_the_supervisor_worker(sender, **_):
    _ready_file(f"worker-{sender.hostname}")


@beat_init.connect
def _tell_the_supervisor_beat(sender, **_):
    _ready_file("beat")


def _ready_file(name: str) -> None:
    """Under `make run` (config/supervise.py), a file saying this process is up: the supervisor prints what
    to open next once the web server and every worker are, so that it is the last thing on the console."""
    folder = os.environ.get("SUPERVISE_READY_DIR")
    if folder:
        with open(os.path.join(folder, name.replace("/", "_")), "w") as marker:
            marker.write(str(os.getpid()))
