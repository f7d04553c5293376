"""Chains: devnets, the supported chains and the registry's seed (CHAINS), deposit factories, the
service's signers and how they sign, the RPC nodes, the deposit watcher and the transaction outbox."""

from __future__ import annotations

import json
import os

from django.core.exceptions import ImproperlyConfigured

from chains.evm import is_address  # no Django in it: the one definition of an address's shape
from config.settings.django import DEVELOPMENT
from config.settings.env import env_bool, env_int, env_list

# Chains the service settles on (Ethereum, Optimism, BNB Chain, Polygon, Base,
# Arbitrum, Avalanche C-Chain, B3).
# `make run` starts the registry's devnets (anvil) in development unless DEVNET=0: Devnet A (31337) and
# Devnet B (31338), on DEVNET_PORTS. Orders may then use them too.
DEVNET = env_bool("DEVNET", DEVELOPMENT)
DEVNET_PORTS = [int(p) for p in env_list("DEVNET_PORTS", "8545,8546")]
DEVNET_CHAIN_IDS = [31337, 31338] if DEVNET else []
SUPPORTED_CHAIN_IDS = [int(c) for c in env_list("SUPPORTED_CHAIN_IDS", "1,10,56,137,8453,42161,43114,8333")]
SUPPORTED_CHAIN_IDS += [c for c in DEVNET_CHAIN_IDS if c not in SUPPORTED_CHAIN_IDS]

# Deposit addresses are CREATE2 addresses of per-payment forwarders deployed on demand by the
# service's DepositFactory on each chain (chains/contracts; the forwarder's init-code hash comes from
# its compiled artifact). A chain takes payments only when the registry (CHAINS, below) names its
# factory. The devnets' factory is where a fresh devnet puts it: the first contract deployed by anvil's
# account 0. DEPOSIT_FACTORY_ADDRESS, when set, is the factory of every real chain of the default
# registry (the same deployer and nonce give the same address on every chain).
DEVNET_FACTORY_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
# The test helpers pay from one devnet account that every test-mode organization shares: one call sends at
# most this many whole tokens (and no more than this many US dollars' worth, where the token has a price).
TEST_HELPER_MAX_TOKENS = env_int("TEST_HELPER_MAX_TOKENS", 10_000)
DEPOSIT_FACTORY_ADDRESS = os.environ.get("DEPOSIT_FACTORY_ADDRESS", "")
if DEPOSIT_FACTORY_ADDRESS and (
    not is_address(DEPOSIT_FACTORY_ADDRESS) or int(DEPOSIT_FACTORY_ADDRESS, 16) == 0
):
    raise ImproperlyConfigured(
        "DEPOSIT_FACTORY_ADDRESS must be the address of the deployed DepositFactory (0x and 40 hex characters)."
    )

# The service's signers (chains/signers.py): their public addresses here; their keys, VAULT_PRIVATE_KEY
# and SOLVER_PRIVATE_KEY, only in the worker processes' environment. The vault owns the deposit factories,
# receives sweeps and pays refunds; the solver stands in for the relay provider between the devnets.
# Development: anvil's accounts 0 (the devnet deployer) and 9, whose keys are anvil's public test keys.
VAULT_ADDRESS = os.environ.get(
    "VAULT_ADDRESS", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" if DEVELOPMENT else ""
)
SOLVER_ADDRESS = os.environ.get(
    "SOLVER_ADDRESS", "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720" if DEVELOPMENT else ""
)
# The deployer deploys the deposit factory (`manage.py chains deploy-factory`); by default the vault.
DEPLOYER_ADDRESS = os.environ.get("DEPLOYER_ADDRESS", "")
for _name, _address in (
    ("VAULT_ADDRESS", VAULT_ADDRESS),
    ("SOLVER_ADDRESS", SOLVER_ADDRESS),
    ("DEPLOYER_ADDRESS", DEPLOYER_ADDRESS),
):
    if _address and not is_address(_address):
        raise ImproperlyConfigured(f"{_name} must be an address (0x and 40 hex characters).")
# How transactions are signed (chains/signers.py): "env" (keys in the signing worker's environment;
# development and tests only), "keystore" (Web3 Secret Storage files, passphrases read from files) or
# "remote" (a remote signer's eth_signTransaction over HTTP).
SIGNER_BACKEND = os.environ.get("SIGNER_BACKEND", "env" if DEVELOPMENT else "keystore")
if SIGNER_BACKEND not in ("env", "keystore", "remote"):
    raise ImproperlyConfigured("SIGNER_BACKEND must be env, keystore or remote.")
SIGNER_KEYSTORES = {
    role: (
        os.environ.get(f"{role.upper()}_KEYSTORE_FILE", ""),
        os.environ.get(f"{role.upper()}_PASSPHRASE_FILE", ""),
    )
    for role in ("vault", "solver", "deployer")
}
SIGNER_REMOTE_URL = os.environ.get("SIGNER_REMOTE_URL", "")
SIGNER_REMOTE_TOKEN = os.environ.get(
    "SIGNER_REMOTE_TOKEN", ""
)  # sent as a bearer token, when the signer asks one
SIGNER_REMOTE_TIMEOUT_SECONDS = float(os.environ.get("SIGNER_REMOTE_TIMEOUT_SECONDS", "10"))
if SIGNER_BACKEND == "remote" and not SIGNER_REMOTE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        "SIGNER_BACKEND=remote needs SIGNER_REMOTE_URL, the remote signer's http(s) URL."
    )
if not DEVELOPMENT:
    _plain_keys = [
        v for v in ("VAULT_PRIVATE_KEY", "SOLVER_PRIVATE_KEY", "DEPLOYER_PRIVATE_KEY") if os.environ.get(v)
    ]
    if SIGNER_BACKEND == "env" or _plain_keys:
        raise ImproperlyConfigured(
            "Production never reads a plain private key from the environment"
            + (f" (remove {', '.join(_plain_keys)})" if _plain_keys else "")
            + ": set SIGNER_BACKEND=keystore (<ROLE>_KEYSTORE_FILE and <ROLE>_PASSPHRASE_FILE) or "
            "SIGNER_BACKEND=remote (SIGNER_REMOTE_URL)."
        )
CHAIN_READER = os.environ.get("CHAIN_READER", "offline")
# "1=https://rpc.example,8453=https://..." : one JSON-RPC URL per chain id.
CHAIN_RPC_URLS = {
    int(chain): url
    for chain, _, url in (item.partition("=") for item in env_list("CHAIN_RPC_URLS"))
    if chain.strip().isdigit() and url
}
# The seed of the chain registry (chains.Chain rows; chains/registry.py), imported after `migrate`: rows it
# created follow it, rows staff added or edited (admin, `manage.py chains`) are left alone. CHAINS, a JSON
# list of entries, replaces the default: in development the two devnets `make run` starts (ports from
# DEVNET_PORTS) beside the chains of the shipped token list, which have an RPC URL only when CHAIN_RPC_URLS
# gives one.
_KNOWN_CHAINS = {  # chain id: (name, native symbol, explorer)
    1: ("Ethereum", "ETH", "https://etherscan.io"),
    10: ("OP Mainnet", "ETH", "https://optimistic.etherscan.io"),
    56: ("BNB Smart Chain", "BNB", "https://bscscan.com"),
    137: ("Polygon", "POL", "https://polygonscan.com"),
    8333: ("B3", "ETH", "https://explorer.b3.fun"),
    8453: ("Base", "ETH", "https://basescan.org"),
    42161: ("Arbitrum One", "ETH", "https://arbiscan.io"),
    43114: ("Avalanche C-Chain", "AVAX", "https://snowtrace.io"),
}
if "CHAINS" in os.environ:
    try:
        CHAINS = json.loads(os.environ["CHAINS"])
    except ValueError as exc:
        raise ImproperlyConfigured(f"CHAINS is not JSON: {exc}") from None
else:
    CHAINS = (
        [
            {
                "chain_id": 31337 + n,
                "name": f"Devnet {'AB'[n]}",
                "native_symbol": "ETH",
                "devnet": True,
                "rpc_url": f"http://127.0.0.1:{port}",
                "confirmations": 1,
                "poll_interval_seconds": 1,
                "factory_address": DEVNET_FACTORY_ADDRESS,
                "max_fee_per_gas_gwei": 10,
            }
            for n, port in enumerate(DEVNET_PORTS[:2])
        ]
        if DEVNET
        else []
    )
    CHAINS += [
        {
            "chain_id": chain_id,
            **dict(
                zip(
                    ("name", "native_symbol", "explorer_url"),
                    _KNOWN_CHAINS.get(chain_id, (f"Chain {chain_id}", "ETH", "")),
                    strict=True,
                )
            ),
            "rpc_url": CHAIN_RPC_URLS.get(chain_id, ""),
            # The devnet factory exists on no real chain: a real one is named in CHAINS or DEPOSIT_FACTORY_ADDRESS.
            "factory_address": DEPOSIT_FACTORY_ADDRESS,
        }
        for chain_id in SUPPORTED_CHAIN_IDS
        if chain_id not in DEVNET_CHAIN_IDS
    ]
if not DEVELOPMENT and not VAULT_ADDRESS:
    raise ImproperlyConfigured(
        "VAULT_ADDRESS is not set: the vault (the owner of the deposit factories) receives every payment."
    )
# The deposit watcher (chains/watcher.py): how much one scan reads. A deposit goes to its owner's handler,
# registered in code (chains/handlers.py).
WATCHER_MAX_BLOCKS = env_int("WATCHER_MAX_BLOCKS", 500)
WATCHER_ADDRESSES_PER_QUERY = env_int("WATCHER_ADDRESSES_PER_QUERY", 500)
# Native coin is also seen by balance (a contract wallet pays by an internal call): addresses per
# eth_getBalance batch.
WATCHER_BALANCES_PER_BATCH = env_int("WATCHER_BALANCES_PER_BATCH", 500)
# A real chain's first scan starts this many blocks before its confirmed head.
WATCHER_FIRST_LOOKBACK_BLOCKS = env_int("WATCHER_FIRST_LOOKBACK_BLOCKS", 100)
# A scan hands up to this many new deposits to their owners itself; more (a burst in one block) go to the
# settlement queue's workers, one task each, handed over side by side and settled at once where they land.
WATCHER_HAND_OVER_HERE = env_int("WATCHER_HAND_OVER_HERE", 2)
# Reorgs deeper than a chain's confirmations: how far back the watcher and the outbox look again when the
# chain they read has changed (and what they check after each scan or poll), and how many blocks a deposit
# whose block was taken away may take to come back before it is withdrawn.
REORG_WINDOW_BLOCKS = env_int("REORG_WINDOW_BLOCKS", 64)
REORG_GRACE_BLOCKS = env_int("REORG_GRACE_BLOCKS", 10)
PROVIDER_TIMEOUT_SECONDS = float(os.environ.get("PROVIDER_TIMEOUT_SECONDS", "10"))
PROVIDER_MAX_RETRIES = env_int("PROVIDER_MAX_RETRIES", 2)
# A chain's RPC node that fails, serves another chain or lags is left out of its rotation this long
# (chains/client.py); it is still tried, last, when no other node answers.
RPC_SET_ASIDE_SECONDS = env_int("RPC_SET_ASIDE_SECONDS", 30)

# The transaction outbox (chains/outbox.py): how often in-flight transactions are looked at, when an
# unmined one is broadcast again, when its fee is raised (and by how much). A finished transaction goes to
# the handler of its key's kind, registered in code (chains/handlers.py).
OUTBOX_POLL_SECONDS = float(os.environ.get("OUTBOX_POLL_SECONDS", "1" if DEVNET else "10"))
# Between full polls, how often beat looks at the receipts of broadcast transactions alone (0: only the full
# poll does), so that an outcome is known soon after its block.
OUTBOX_RECEIPT_POLL_SECONDS = float(os.environ.get("OUTBOX_RECEIPT_POLL_SECONDS", "0.4" if DEVNET else "2"))
# A receipts pass finishes up to this many confirmed transactions itself, and tells the owners of up to this
# many in a block, not yet confirmed; more (a burst's deliveries and sweeps) are also queued to the chain's
# workers, one task each, who share them with the pass.
OUTBOX_FINISH_HERE = env_int("OUTBOX_FINISH_HERE", 2)
OUTBOX_RESEND_AFTER_SECONDS = env_int("OUTBOX_RESEND_AFTER_SECONDS", 20)
OUTBOX_REBROADCAST_SECONDS = env_int("OUTBOX_REBROADCAST_SECONDS", 30)
OUTBOX_FEE_BUMP_SECONDS = env_int("OUTBOX_FEE_BUMP_SECONDS", 120)
OUTBOX_FEE_BUMP_PERCENT = env_int("OUTBOX_FEE_BUMP_PERCENT", 25)
# At most this many of one sender's queued transactions on a chain are signed together, at consecutive nonces,
# and broadcast in one JSON-RPC batch (chains/outbox/send.py): a burst's deliveries make the next block.
OUTBOX_SIGN_BATCH = env_int("OUTBOX_SIGN_BATCH", 50)
# The most the outbox ever bids per gas, in gwei, on a chain whose registry entry names no cap of its own
# (`max_fee_per_gas_gwei`): fee bumps stop there, and staff are told.
OUTBOX_MAX_FEE_PER_GAS_GWEI = float(os.environ.get("OUTBOX_MAX_FEE_PER_GAS_GWEI", "200"))
# A signer's count on a chain ahead of the database's (a database restored from a backup: chains/outbox/adopt.py):
# the sender's transactions the database does not hold are looked for in at most this many of the chain's
# latest blocks, and one found that matches nothing asked yet is taken by a transaction asked for with the same
# effect within this many hours of its finding.
OUTBOX_ADOPT_MAX_BLOCKS = env_int("OUTBOX_ADOPT_MAX_BLOCKS", 200_000)
OUTBOX_ADOPT_CLAIM_HOURS = env_int("OUTBOX_ADOPT_CLAIM_HOURS", 72)
# Test hook, honoured in development only: the outbox exits the process at this point ("before_sign",
# "after_sign", "after_broadcast"), as a killed worker would. The suite's kill-the-worker tests set it.
OUTBOX_CRASH_AT = os.environ.get("OUTBOX_CRASH_AT", "") if DEVELOPMENT else ""
