"""The service's signing keys: read from the worker's environment when a transaction is signed.

Two roles sign: the **vault** (it owns the deposit factories, receives sweeps
and pays refunds) and, on devnets only, the **solver** (it stands in for the
relay provider and delivers on the destination devnet). Their addresses are
public settings (VAULT_ADDRESS, SOLVER_ADDRESS), which the web tier may read;
their keys are the environment variables VAULT_PRIVATE_KEY and
SOLVER_PRIVATE_KEY, which only worker processes are given (`make run` hands
them to the workers alone). A key is never stored in the settings, the
database or a log line: it is read, used to sign, and dropped.
"""

from __future__ import annotations

import os

from django.conf import settings
from eth_account import Account
from eth_account.signers.local import LocalAccount

KEY_VARIABLES = {"vault": "VAULT_PRIVATE_KEY", "solver": "SOLVER_PRIVATE_KEY"}


class SignerUnavailable(RuntimeError):
    """This process holds no key for the role (a web process, or a worker started without it)."""


def signer_address(role: str) -> str:
    """The public address of a signing role, from the settings; '' when none is configured."""
    return {"vault": settings.VAULT_ADDRESS, "solver": settings.SOLVER_ADDRESS}[role]


def signer_account(role: str) -> LocalAccount:
    """The account that signs for `role`; refuses a key that is not the configured address's."""
    variable = KEY_VARIABLES[role]
    key = os.environ.get(variable, "")
    if not key:
        raise SignerUnavailable(f"{variable} is not set in this process: only workers sign transactions")
    try:
        account = Account.from_key(key)
    except (ValueError, TypeError):
        raise SignerUnavailable(f"{variable} is not a private key") from None  # never echo the value
    expected = signer_address(role)
    if expected and account.address.lower() != expected.lower():
        raise SignerUnavailable(f"{variable} is not the key of {role} address {expected}")
    return account
