from celery import shared_task

from chains.watcher import retry_unhandled_deposits, scan_chain


@shared_task
def scan_chain_deposits(chain_id: int) -> int | None:
    """One scan of one chain (beat runs one per chain at its poll interval); the deposits recorded."""
    result = scan_chain(chain_id)
    return result.deposits if result is not None else None


@shared_task
def retry_deposit_handlers() -> int:
    return retry_unhandled_deposits()
