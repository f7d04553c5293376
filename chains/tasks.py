import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from chains.families import family_of, outbox_poll_all, outbox_receipts_all
from chains.models import ChainCursor, Deposit, OutboxTx
from chains.outbox import outbox_finish, outbox_included_now
from chains.registry import chains
from chains.watcher import hand_over_here, retry_unhandled_deposits

logger = logging.getLogger(__name__)


@shared_task
def scan_due_chains() -> list[int]:
    """Beat's dispatcher (every WATCHER_DISPATCH_SECONDS): a scan of each chain with an RPC URL whose poll
    interval has passed since its last scan; the chains sent. A chain added at run time is scanned too."""
    now = timezone.now()
    last = dict(ChainCursor.objects.values_list("chain_id", "last_scan_at"))
    due = []
    # The last scan ended some time after the dispatch that sent it: a chain is due half a dispatch early, or a
    # 1 s chain dispatched every second would be scanned every other second.
    slack = settings.WATCHER_DISPATCH_SECONDS / 2
    for chain in chains():
        scanned_at = last.get(chain.chain_id)
        if chain.rpc_urls and (
            scanned_at is None
            or now - scanned_at >= timedelta(seconds=max(0.0, chain.poll_interval_seconds - slack))
        ):
            due.append(chain.chain_id)
    for chain_id in due:
        scan_chain_deposits.apply_async((chain_id,), expires=60)
    return due


@shared_task
def scan_chain_deposits(chain_id: int) -> int | None:
    """One scan of one chain by its family (beat runs one per chain at its poll interval); the deposits
    recorded. An EVM scan also reads the receipts in the blocks it confirms (chains/watcher.py)."""
    result = family_of(chain_id).scan(chain_id)
    return result.deposits if result is not None else None


@shared_task(ignore_result=True)
def hand_over_deposit(deposit_id: int) -> None:
    """Hand one deposit of a scan's burst to its owner, unless the scan or another worker took it, and settle
    here what it paid (chains.watcher.hand_over)."""
    deposit = Deposit.objects.filter(pk=deposit_id).first()
    if deposit is not None:
        hand_over_here(deposit)


@shared_task
def retry_deposit_handlers() -> int:
    return retry_unhandled_deposits()


@shared_task
def outbox_send_task(tx_id: int) -> None:
    """Sign and broadcast one outbox transaction, by its chain's family (chains/outbox for EVM); running it
    twice sends nothing twice."""
    tx = OutboxTx.objects.filter(pk=tx_id).first()
    if tx is None:
        logger.warning("Outbox transaction %s is gone: nothing to send", tx_id)
        return
    family_of(tx.chain_id).send(tx)


@shared_task(ignore_result=True)
def outbox_finish_task(tx_id: int) -> None:
    """Finish one confirmed transaction of a receipts pass's burst, unless the pass or another worker took it
    (chains.outbox.poll._queue_finishes)."""
    outbox_finish(tx_id)


@shared_task(ignore_result=True)
def outbox_included_task(tx_id: int) -> None:
    """Tell the owner of one transaction of a receipts pass's burst that it is in a block (the pass tells them
    too, from the other end: chains.outbox.poll._queue_included)."""
    outbox_included_now(tx_id)


@shared_task(ignore_result=True)
def outbox_receipts() -> int:
    """Beat's quick look at the receipts of broadcast transactions (every OUTBOX_RECEIPT_POLL_SECONDS), so that
    an outcome is known soon after its block rather than at the next full outbox poll."""
    return outbox_receipts_all()


@shared_task
def outbox_poll() -> int:
    """Receipts, rebroadcasts, fee bumps and lost sends of every in-flight outbox transaction, by the family of
    its chain."""
    return outbox_poll_all()
