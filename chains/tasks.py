import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone
from web3.exceptions import Web3RPCError

from chains.models import ChainCursor, OutboxTx
from chains.outbox import outbox_check_receipt, outbox_send
from chains.outbox import outbox_poll as poll_outbox
from chains.registry import chains
from chains.watcher import retry_unhandled_deposits, scan_chain

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
    """One scan of one chain (beat runs one per chain at its poll interval); the deposits recorded."""
    result = scan_chain(chain_id)
    return result.deposits if result is not None else None


@shared_task
def retry_deposit_handlers() -> int:
    return retry_unhandled_deposits()


@shared_task
def outbox_send_task(tx_id: int) -> None:
    """Sign and broadcast one outbox transaction (chains/outbox.py); running it twice sends nothing twice.
    Then its receipt is asked for shortly, rather than at the next poll."""
    tx = outbox_send(tx_id)
    sent = (OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST)  # as it was before its broadcast was recorded
    if tx is not None and tx.status in sent and settings.OUTBOX_RECEIPT_CHECKS > 0:
        outbox_receipt_task.apply_async(args=[tx_id, 1], countdown=settings.OUTBOX_RECEIPT_CHECK_SECONDS)


@shared_task(ignore_result=True)
def outbox_receipt_task(tx_id: int, attempt: int) -> None:
    """One early look at a broadcast transaction's receipt; again shortly while it is unmined, up to
    OUTBOX_RECEIPT_CHECKS looks, after which the outbox poll alone watches it."""
    try:
        finished = outbox_check_receipt(tx_id)
    except (Web3RPCError, ValueError, OSError) as exc:
        logger.info("Outbox %s: receipt not read yet (%s); the poll will", tx_id, exc)
        return
    if not finished and attempt < settings.OUTBOX_RECEIPT_CHECKS:
        outbox_receipt_task.apply_async(
            args=[tx_id, attempt + 1], countdown=settings.OUTBOX_RECEIPT_CHECK_SECONDS
        )


@shared_task
def outbox_poll() -> int:
    """Receipts, rebroadcasts, fee bumps and lost sends of every in-flight outbox transaction."""
    return poll_outbox()
