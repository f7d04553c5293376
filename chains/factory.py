"""The deposit factory on a chain: where it is (one address on every chain), whether its code is ours, deploying it.

The factory is deployed with CREATE2 through the deterministic deployment proxy
(0x4e59b448…4956C, on nearly every EVM chain and in anvil), with a fixed salt and
the vault as its owner. Its address depends only on those, so it is the same on
every chain the service's vault uses: merchants and auditors can recognise it.

`factory_deploy_submit` asks the outbox for the deployment under the business key
`chains:deploy-factory:<chain id>`, signed by the deployer signer; asking again
returns the same transaction. When it is mined, `factory_recorded` (called by the
outbox as the transaction finishes) records the address on the chain's row (the
proxy reverts when it cannot create the contract, so a mined deployment is one
that created it), even if the command that asked was stopped.
"""

from __future__ import annotations

import logging
from functools import cache

from django.db.models import Q
from django.utils import timezone
from eth_abi import encode
from eth_utils import keccak
from web3 import Web3

from chains.artifacts import artifact
from chains.evm import DETERMINISTIC_DEPLOYER, create2_address
from chains.handlers import outbox_handler
from chains.keys import OwnerKind, Signer, Step, extended, extensions_of, kind_key
from chains.models import Chain as ChainRow
from chains.models import OutboxTx
from chains.registry import Chain
from chains.signers import signer_address

logger = logging.getLogger(__name__)

FACTORY_SALT = keccak(b"checkout.DepositFactory.v1")


class FactoryError(RuntimeError):
    pass


def factory_init_code(owner: str) -> bytes:
    return bytes.fromhex(artifact("DepositFactory")["bytecode"].removeprefix("0x")) + encode(
        ["address"], [owner]
    )


def factory_address(owner: str | None = None) -> str:
    """Where the factory owned by `owner` (the vault) is on every chain."""
    owner = owner or signer_address(Signer.VAULT)
    if not owner:
        raise FactoryError("VAULT_ADDRESS is not set: the factory's owner is the vault")
    return create2_address(
        factory=DETERMINISTIC_DEPLOYER, salt=FACTORY_SALT, init_code_hash=keccak(factory_init_code(owner))
    )


@cache
def _runtime_code() -> bytes:
    return bytes.fromhex(artifact("DepositFactory")["deployedBytecode"].removeprefix("0x"))


def factory_code_state(w3: Web3, address: str) -> str:
    """ "ours" (the compiled artifact's code), "missing" (no code) or "different" (another contract)."""
    code = bytes(w3.eth.get_code(Web3.to_checksum_address(address)))
    if not code:
        return "missing"
    return "ours" if code == _runtime_code() else "different"


def factory_owner(w3: Web3, address: str) -> str:
    contract = w3.eth.contract(
        address=Web3.to_checksum_address(address), abi=artifact("DepositFactory")["abi"]
    )
    return contract.functions.owner().call()


def deploy_key(chain_id: int, attempt: int = 1) -> str:
    """`chains:deploy-factory:<chain id>`, and `…:attempt-<n>` for an attempt after one that failed."""
    first = kind_key(OwnerKind.CHAINS, Step.DEPLOY, chain_id)
    return first if attempt == 1 else extended(first, f"attempt-{attempt}")


def factory_deploy_attempt(chain: Chain) -> tuple[OutboxTx | None, int]:
    """The latest deployment asked for on `chain` and its attempt number; (None, 0) before the first. The
    attempts are asked for in order, each once the one before it failed, so the latest is the first key of
    the sequence not asked for yet, less one."""
    first = deploy_key(chain.chain_id)
    asked = {
        tx.key: tx for tx in OutboxTx.objects.filter(Q(key=first) | Q(key__startswith=extensions_of(first)))
    }
    attempt = 0
    while deploy_key(chain.chain_id, attempt + 1) in asked:
        attempt += 1
    return (asked[deploy_key(chain.chain_id, attempt)] if attempt else None), attempt


def factory_deploy_submit(chain: Chain, attempt: int = 1) -> OutboxTx:
    """The factory's deployment on `chain`, asked of the outbox once per attempt (signed by the deployer). A
    deployment is safe to ask again once one failed: the same CREATE2 address, created at most once."""
    from chains.outbox import outbox_submit

    owner = signer_address(Signer.VAULT)
    data = "0x" + FACTORY_SALT.hex() + factory_init_code(owner).hex()
    return outbox_submit(
        key=deploy_key(chain.chain_id, attempt),
        chain_id=chain.chain_id,
        signer=Signer.DEPLOYER,
        to=DETERMINISTIC_DEPLOYER,
        data=data,
    )


def factory_record(chain_id: int, address: str) -> bool:
    """Record the factory on the chain's row (now a staff row: the seed no longer changes it); True if it
    changed."""
    changed = (
        ChainRow.objects.filter(pk=chain_id)
        .exclude(factory_address=address)
        .update(factory_address=address, source=ChainRow.Source.STAFF, updated_at=timezone.now())
    )
    if changed:
        from chains.registry import registry_forget

        registry_forget()
        logger.info("Chain %s: the deposit factory %s is recorded", chain_id, address)
    return bool(changed)


@outbox_handler(OwnerKind.CHAINS)  # the chains app's own transactions: `chains:deploy-factory:<id>`
def factory_recorded(tx: OutboxTx) -> None:
    """The outbox finished a factory deployment: record the factory if its code is there now."""
    if tx.step != Step.DEPLOY:
        logger.warning("Outbox %s: not a transaction of the chains app", tx.key)
        return
    if tx.status != OutboxTx.Status.MINED:
        logger.error("Deploying the deposit factory on chain %s failed: %s", tx.chain_id, tx.error)
        return
    address = factory_address()
    factory_record(tx.chain_id, address)
