"""The chains test mode may use (a devnet or a public test network: `Chain.for_tests`), and whether the request
being answered acts for a test-mode organization (platform_api.testmode), which the chain fields ask."""

from __future__ import annotations

from chains.registry import chain_get, chains
from observability import context

TEST_MODE = "test"


def test_chain_ids() -> list[int]:
    """The chains test-mode organizations may use: the registry's devnets and public test networks."""
    return [chain.chain_id for chain in chains() if chain.for_tests]


def test_chain_refusal(chain_id: int) -> str | None:
    """Why a test-mode organization may not use `chain_id` (None: it may)."""
    chain = chain_get(chain_id)
    if chain is not None and chain.for_tests:
        return None
    allowed = ", ".join(str(c) for c in test_chain_ids()) or "none is configured"
    return (
        f"Chain {chain_id} is a live chain: in test mode (a svc_test_ key, the dashboard's test mode) only "
        f"test chains may be used ({allowed})."
    )


def acting_in_test_mode() -> bool:
    """Whether the request being answered acts for a test-mode organization."""
    return context.mode.get() == TEST_MODE


def enter_test_mode(test: bool) -> None:
    """What the request acts for, once its organization is known (cleared with the request's context)."""
    context.mode.set(TEST_MODE if test else "")
