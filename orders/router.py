"""The call router: how the solver makes a contract order's call from its inventory in one transaction.

A contract order's call spends the destination token (an NFT's price, a tournament's entry), so the caller must
first allow the contract to take it. The devnet solver approves and then calls, two transactions whose
allowance the next order's approve would replace before the first call is mined (`SolverAllowance` makes
them take turns). The router (chains/contracts/src/CallRouter.sol) does both in one transaction: it takes the
amount from its caller, allows the spender exactly that, makes the call, withdraws the allowance and returns
what the call did not spend, or reverts as a whole. Orders paid together are then called together.

It has no owner and no constructor argument, so it is deployed with CREATE2 through the deterministic
deployment proxy at one address on every chain (`manage.py relay deploy-router CHAIN_ID`, signed by the
deployer, `inventory:router:<chain>`). The solver gives it one standing allowance per chain and token
(`inventory:router-allowance:<chain>:<token>`, asked for by the first order that needs it, which takes the
relay provider meanwhile): the router moves only its caller's tokens, in its caller's own call. As on the
provider's path, `msg.sender` of the order's call is a contract of ours, not the buyer.
"""

from __future__ import annotations

import logging
from functools import cache

from eth_utils import keccak, to_checksum_address

from chains.artifacts import artifact, encode_call
from chains.client import web3_for
from chains.evm import DETERMINISTIC_DEPLOYER, ZERO_ADDRESS, create2_address
from chains.keys import OwnerKind, Signer, Step, kind_key
from chains.models import OutboxTx
from chains.outbox import outbox_submit
from chains.registry import chain_get
from orders.relays import standing_allowance

logger = logging.getLogger(__name__)

ROUTER_SALT = keccak(b"checkout.CallRouter.v1")


@cache
def _init_code() -> bytes:
    return bytes.fromhex(artifact("CallRouter")["bytecode"].removeprefix("0x"))


@cache
def _runtime_code() -> bytes:
    return bytes.fromhex(artifact("CallRouter")["deployedBytecode"].removeprefix("0x"))


def router_address() -> str:
    """Where the router is on every chain."""
    return create2_address(
        factory=DETERMINISTIC_DEPLOYER, salt=ROUTER_SALT, init_code_hash=keccak(_init_code())
    )


def router_state(chain_id: int) -> str:
    """ "ours" (the artifact's code at the router's address), "missing", "different" or "unknown" (no node).

    Read from the chain each time an order asks (one request, off the hot path): a call sent to an address
    without code would succeed and do nothing, so no answer is remembered that a devnet reset could belie."""
    chain = chain_get(chain_id)
    if chain is None or not chain.rpc_urls:
        return "unknown"
    try:
        code = bytes(web3_for(chain).eth.get_code(to_checksum_address(router_address())))
    except Exception as exc:  # no node answered: the order takes the relay provider
        logger.info("Chain %s: the router's code is not readable: %s", chain_id, exc.__class__.__name__)
        return "unknown"
    if not code:
        return "missing"
    return "ours" if code == _runtime_code() else "different"


def router_deploy_submit(chain_id: int) -> OutboxTx:
    """The router's deployment on a chain, asked of the outbox once (signed by the deployer)."""
    return outbox_submit(
        key=kind_key(OwnerKind.INVENTORY, Step.DEPLOY, chain_id),
        chain_id=chain_id,
        signer=Signer.DEPLOYER,
        to=DETERMINISTIC_DEPLOYER,
        data="0x" + ROUTER_SALT.hex() + _init_code().hex(),
    )


def solver_allowance(chain_id: int, token: str) -> OutboxTx | None:
    """The solver's standing allowance of `token` for the router on a chain, asked for once (a failed one is
    asked for again under the next attempt's key); None for the native coin, which travels as the call's
    value."""
    if token.lower() == ZERO_ADDRESS:
        return None
    base = kind_key(OwnerKind.INVENTORY, Step.ALLOWANCE, chain_id, token.lower())
    return standing_allowance(
        base, chain_id=chain_id, signer=Signer.SOLVER, token=token, spender=router_address()
    )


def routed_call(*, token: str, amount: int, spender: str | None, target: str, data: str) -> str:
    """The router's calldata for one call that spends `amount` of `token` (0 and any token: it spends none)."""
    spends = spender is not None and token.lower() != ZERO_ADDRESS and amount > 0
    return encode_call(
        "CallRouter",
        "call",
        to_checksum_address(token if spends else ZERO_ADDRESS),
        amount if spends else 0,
        to_checksum_address(spender if spender is not None and spends else ZERO_ADDRESS),
        to_checksum_address(target),
        bytes.fromhex(data.removeprefix("0x")),
    )
