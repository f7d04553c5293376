"""What the service owes merchants out of its vault (a merchant's refund balance, refunds funded and not yet
delivered): registered by the apps that keep it, checked by reconciliation (ledger.reconcile), which reports a
vault that holds less of a token than is owed from it.

    @liability("refund_balance")
    def refund_balances_owed(chain_id: int) -> dict[str, int]: ...   # {token address: amount owed}
"""

from __future__ import annotations

from collections.abc import Callable

Owed = Callable[[int], dict[str, int]]
_liabilities: dict[str, Owed] = {}


def liability(name: str) -> Callable[[Owed], Owed]:
    def register(owed: Owed) -> Owed:
        _liabilities[name] = owed
        return owed

    return register


def owed_on(chain_id: int) -> list[tuple[str, str, int]]:
    """(liability, token, amount) the vault must hold on the chain, beside what the ledger expects of it."""
    return [
        (name, token.lower(), amount)
        for name, owed in sorted(_liabilities.items())
        for token, amount in owed(chain_id).items()
        if amount > 0
    ]
