from celery import shared_task

from chains.outbox import outbox_poll as poll_outbox
from chains.outbox import outbox_send
from chains.watcher import retry_unhandled_deposits, scan_chain


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
    """Sign and broadcast one outbox transaction (chains/outbox.py); running it twice sends nothing twice."""
    outbox_send(tx_id)


@shared_task
def outbox_poll() -> int:
    """Receipts, rebroadcasts, fee bumps and lost sends of every in-flight outbox transaction."""
    return poll_outbox()
