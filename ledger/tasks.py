from celery import shared_task

from chains.registry import chains
from ledger.reconcile import reconcile_chain


@shared_task
def reconcile_chains() -> dict[int, int]:
    """The hourly reconciliation (RECONCILE_INTERVAL_SECONDS): {chain id: differences, -1 if it failed}."""
    result = {}
    for chain in chains():
        if not chain.rpc_urls:
            continue  # the watcher does not read it: the service holds nothing there
        run = reconcile_chain(chain.chain_id)
        result[chain.chain_id] = -1 if run.error else run.differences
    return result
