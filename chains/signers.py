"""The service's signing keys, behind a backend chosen by SIGNER_BACKEND; used only where transactions are signed.

Three roles sign: the **vault** (it owns the deposit factories, receives
sweeps and pays refunds), the **solver** (on devnets it stands in for the relay
provider) and the **deployer** (it deploys the deposit factory; by default the
vault's address). Their addresses are public settings (VAULT_ADDRESS,
SOLVER_ADDRESS, DEPLOYER_ADDRESS) that any process may read. How a transaction
gets signed is the backend's business:

- ``env``: the keys are the environment variables VAULT_PRIVATE_KEY,
  SOLVER_PRIVATE_KEY and DEPLOYER_PRIVATE_KEY of the signing worker (`make run`
  gives them to that worker alone). Development and tests only: production
  refuses to start with this backend, or with any of these variables set.
- ``keystore``: one encrypted Web3 Secret Storage file per role
  (<ROLE>_KEYSTORE_FILE), its passphrase read from a file (<ROLE>_PASSPHRASE_FILE,
  a mounted secret). Decrypted at the first signature in the signing worker and
  kept in that process's memory only.
- ``remote``: a remote signer over HTTP that speaks the ``eth_signTransaction``
  JSON-RPC method (Web3Signer, Clef, and most KMS-backed signers): the service
  sends the unsigned transaction and gets back the signed bytes, so no key is
  ever in its memory. The answer is decoded and checked: signed by the role's
  address, for exactly the transaction asked; anything else is refused.

A key, a passphrase or a signer's answer never goes into a setting, the
database, a log line or an exception message.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from django.conf import settings
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_account.typed_transactions import TypedTransaction
from eth_utils import keccak
from hexbytes import HexBytes

from chains.keys import Signer

logger = logging.getLogger(__name__)

ROLES = tuple(Signer)
KEY_VARIABLES = {
    "vault": "VAULT_PRIVATE_KEY",
    "solver": "SOLVER_PRIVATE_KEY",
    "deployer": "DEPLOYER_PRIVATE_KEY",
}


class SignerUnavailable(RuntimeError):
    """This process cannot sign for the role (a web process, a worker started without the key, a signer down)."""


@dataclass(frozen=True)
class Signed:
    raw: str  # 0x-hex
    tx_hash: str  # 0x-hex


def signer_address(role: str) -> str:
    """The public address of a signing role, from the settings; '' when none is configured."""
    return {
        "vault": settings.VAULT_ADDRESS,
        "solver": settings.SOLVER_ADDRESS,
        "deployer": settings.DEPLOYER_ADDRESS or settings.VAULT_ADDRESS,
    }[role]


def _checked_account(role: str, account: LocalAccount, what: str) -> LocalAccount:
    expected = signer_address(role)
    if expected and account.address.lower() != expected.lower():
        raise SignerUnavailable(f"{what} is not the key of {role} address {expected}")
    return account


def _env_account(role: str) -> LocalAccount:
    variable = KEY_VARIABLES[role]
    key = os.environ.get(variable, "")
    if (
        not key
        and role == "deployer"
        and signer_address(Signer.DEPLOYER).lower() == signer_address(Signer.VAULT).lower()
    ):
        return _env_account("vault")  # the deployer is the vault unless it has an address of its own
    if not key:
        raise SignerUnavailable(f"{variable} is not set in this process: only the signing worker signs")
    try:
        account = Account.from_key(key)
    except (ValueError, TypeError):
        raise SignerUnavailable(f"{variable} is not a private key") from None  # never echo the value
    return _checked_account(role, account, variable)


_unlocked: dict[str, LocalAccount] = {}
_unlock = threading.Lock()


def _keystore_account(role: str) -> LocalAccount:
    """The role's key from its keystore file, decrypted once per process with the passphrase from its file."""
    keystore, passphrase_file = settings.SIGNER_KEYSTORES.get(role, ("", ""))
    if not keystore and role == "deployer":  # the deployer is the vault unless it has a keystore of its own
        role = "vault"
        keystore, passphrase_file = settings.SIGNER_KEYSTORES.get(role, ("", ""))
    if not keystore or not passphrase_file:
        raise SignerUnavailable(f"no keystore file and passphrase file are configured for the {role} signer")
    with _unlock:
        if role not in _unlocked:
            _unlocked[role] = _decrypt(role, Path(keystore), Path(passphrase_file))
        return _unlocked[role]


def _decrypt(role: str, keystore: Path, passphrase_file: Path) -> LocalAccount:
    try:
        encrypted = keystore.read_text()
        passphrase = passphrase_file.read_text().rstrip("\r\n")
    except OSError as exc:
        raise SignerUnavailable(
            f"the {role} keystore or its passphrase file cannot be read: {exc.strerror}"
        ) from None
    try:
        key = Account.decrypt(encrypted, passphrase)
    except (ValueError, TypeError, KeyError):
        raise SignerUnavailable(f"the {role} keystore cannot be decrypted with its passphrase") from None
    account = _checked_account(role, Account.from_key(key), f"the {role} keystore")
    logger.info("The %s signer's keystore is unlocked in this process (%s)", role, account.address)
    return account


def _local_sign(account: LocalAccount, fields: dict[str, Any]) -> Signed:
    signed = account.sign_transaction(fields)
    return Signed(raw="0x" + signed.raw_transaction.hex(), tx_hash="0x" + signed.hash.hex())


def _remote_sign(role: str, fields: dict[str, Any]) -> Signed:
    """`eth_signTransaction` at SIGNER_REMOTE_URL; the answer checked against what was asked."""
    sender = signer_address(role)
    if not sender:
        raise SignerUnavailable(f"no address is configured for the {role} signer")
    params = {
        "from": sender,
        "to": fields["to"],
        "data": fields["data"],
        "value": hex(fields["value"]),
        "gas": hex(fields["gas"]),
        "nonce": hex(fields["nonce"]),
        "chainId": hex(fields["chainId"]),
        "maxFeePerGas": hex(fields["maxFeePerGas"]),
        "maxPriorityFeePerGas": hex(fields["maxPriorityFeePerGas"]),
        "type": "0x2",
    }
    headers = {"Content-Type": "application/json"}
    if settings.SIGNER_REMOTE_TOKEN:
        headers["Authorization"] = f"Bearer {settings.SIGNER_REMOTE_TOKEN}"
    try:
        response = requests.post(
            settings.SIGNER_REMOTE_URL,
            json={"jsonrpc": "2.0", "id": 1, "method": "eth_signTransaction", "params": [params]},
            headers=headers,
            timeout=settings.SIGNER_REMOTE_TIMEOUT_SECONDS,
        )
        response.raise_for_status()
        answer = response.json()
    except requests.HTTPError as exc:
        raise SignerUnavailable(f"the remote signer answered HTTP {exc.response.status_code}") from None
    except (requests.RequestException, ValueError) as exc:
        raise SignerUnavailable(f"the remote signer did not answer ({exc.__class__.__name__})") from None
    if not isinstance(answer, dict) or "error" in answer:
        error = answer.get("error") if isinstance(answer, dict) else None
        message = str(error.get("message"))[:200] if isinstance(error, dict) else "no result"
        raise SignerUnavailable(f"the remote signer refused to sign: {message}")
    result = answer.get("result")
    raw = (
        result.get("raw") if isinstance(result, dict) else result
    )  # Clef: {raw, tx}; Web3Signer: the raw hex
    if not isinstance(raw, str) or not raw.startswith("0x"):
        raise SignerUnavailable("the remote signer's answer is not a signed transaction")
    return _verified(raw, fields, sender)


def _verified(raw: str, fields: dict[str, Any], sender: str) -> Signed:
    """The signed bytes, if they are the transaction asked for, signed by `sender`; else SignerUnavailable."""
    try:
        data = bytes.fromhex(raw[2:])
        decoded = TypedTransaction.from_bytes(HexBytes(data)).as_dict()
        recovered = Account.recover_transaction(raw)
    except Exception:  # any decoding failure: not a transaction we can broadcast
        raise SignerUnavailable("the remote signer's answer is not a valid signed transaction") from None
    asked = {
        "chainId": fields["chainId"],
        "nonce": fields["nonce"],
        "to": bytes.fromhex(fields["to"][2:].lower()),
        "value": fields["value"],
        "gas": fields["gas"],
        "maxFeePerGas": fields["maxFeePerGas"],
        "maxPriorityFeePerGas": fields["maxPriorityFeePerGas"],
        "data": bytes.fromhex(fields["data"][2:] if fields["data"].startswith("0x") else fields["data"]),
    }
    got = {name: decoded.get(name) for name in asked}
    if isinstance(got["to"], str):
        got["to"] = bytes.fromhex(got["to"][2:].lower())
    if isinstance(got["data"], str):
        got["data"] = bytes.fromhex(got["data"][2:])
    if recovered.lower() != sender.lower() or got != asked:
        raise SignerUnavailable("the remote signer returned another transaction than the one asked for")
    return Signed(raw=raw, tx_hash="0x" + keccak(data).hex())


def sign_transaction(role: str, fields: dict[str, Any]) -> Signed:
    """Sign one EIP-1559 transaction (`fields` as eth-account takes them) for `role` with the configured backend."""
    backend = settings.SIGNER_BACKEND
    if backend == "remote":
        return _remote_sign(role, fields)
    account = _keystore_account(role) if backend == "keystore" else _env_account(role)
    return _local_sign(account, fields)


def signer_account(role: str) -> LocalAccount:
    """The local account of `role` (the env and keystore backends); for the devnet tooling and tests."""
    if settings.SIGNER_BACKEND == "keystore":
        return _keystore_account(role)
    if settings.SIGNER_BACKEND == "remote":
        raise SignerUnavailable("the remote signer holds the keys: there is no local account")
    return _env_account(role)


def unlock_keystores() -> list[str]:
    """Decrypt, now, every keystore this process is given (the keystore backend), and return their roles.

    A worker calls it once in its main process before the pool forks, so its children inherit the unlocked
    keys: each child would otherwise pay a scrypt decryption (about half a second of CPU per role) on its
    first signature, all of them at once when a burst of payments arrives. A role whose files are not given
    to this process (a worker without keys) is skipped; one that cannot be read or decrypted is logged and
    left locked, and its signatures fail as they would have (the outbox shows why)."""
    if settings.SIGNER_BACKEND != "keystore":
        return []
    unlocked = []
    for role, (keystore, passphrase) in settings.SIGNER_KEYSTORES.items():
        if not keystore or not passphrase:
            continue
        try:
            _keystore_account(role)
        except SignerUnavailable as exc:
            logger.error("The %s signer stays locked in this worker: %s", role, exc)
            continue
        unlocked.append(role)
    return unlocked


def forget_unlocked_keys() -> None:
    """Drop the keystores decrypted in this process (the suite, between backends)."""
    with _unlock:
        _unlocked.clear()
