"""Local EVM devnets for development: anvil nodes, with the contracts and devnet tokens deployed on each.

`make run` starts one anvil node per devnet of the registry (Devnet A 31337,
Devnet B 31338), then `manage.py devnet_deploy` deploys on each, in this order
from anvil's account 0 (the service's deployer and vault), so that every
address is the same on every fresh start: the DepositFactory (nonce 0, at
DEVNET_FACTORY_ADDRESS), dUSDC (6 decimals), dWETH (18), the balance reader,
the ERC-721 and ERC-1155 mints, the tournament and the reverting target (and Multicall3's
code at its canonical address, as real chains have it). It
mints 1,000,000 whole units of each token to accounts 1-8 (the payers)
and 9 (the solver's inventory), switches the node to 1 s blocks, and writes the
deployment and a token list (with reference USD prices) under VAR_DIR.
Anvil's default accounts are unlocked, so deploying holds no key; the workers of `make run` sign as
the vault (account 0) and the solver (account 9) with anvil's published test keys (devnet_signer_environment).
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from web3 import Web3
from web3.types import RPCEndpoint

from chains.artifacts import artifact
from chains.evm import MULTICALL3_ADDRESS
from chains.registry import Chain, chains
from chains.states import IN_FLIGHT, OUTBOX

ANVIL = Path(settings.BASE_DIR) / "tools" / "node_modules" / ".bin" / "anvil"
NATIVE = "0x" + "00" * 20
TOKENS = (  # symbol, name, decimals, reference USD price
    ("dUSDC", "Devnet USD Coin", 6, "1"),
    ("dWETH", "Devnet Wrapped Ether", 18, "3000"),
)
# The devnet tokens that take signatures (chains/contracts/src/dev/StableToken.sol): EIP-3009 and EIP-2612, with
# this EIP-712 domain version (their domain name is the token's name). dWETH takes none, as WETH.
SIGNATURE_TOKENS = {"dUSDC": "2"}
NATIVE_USD_PRICE = "3000"
MINT_WHOLE_UNITS = 1_000_000
PAYERS = range(1, 9)
SOLVER = 9  # delivers on the destination devnet from its own inventory (orders/relays.py)
# Anvil's public test mnemonic: its accounts' keys are published, and exist on devnets only.
ANVIL_MNEMONIC = "test test test test test test test test test test test junk"
BLOCK_SECONDS = 1


class DevnetError(RuntimeError):
    pass


def devnet_chains() -> list[Chain]:
    return [chain for chain in chains() if chain.devnet] if settings.DEVNET else []


def port_of(chain: Chain) -> int:
    return urlsplit(chain.rpc_url).port or 8545


def anvil_command(chain: Chain) -> list[str]:
    return [
        str(ANVIL),
        "--host",
        "127.0.0.1",
        "--port",
        str(port_of(chain)),
        "--chain-id",
        str(chain.chain_id),
        "--silent",
    ]


def port_is_free(port: int) -> bool:
    """Whether nothing listens on the port. SO_REUSEADDR, as anvil's own listener sets it: the connections
    of a node just stopped (TIME-WAIT, a minute) do not keep a new one from listening there."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_until_up(chain: Chain, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port_of(chain)), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise DevnetError(f"{chain.name} did not start on {chain.rpc_url}")


def deploy_contract(w3: Web3, name: str, *args, sender: str):
    """Deploy one compiled contract from an unlocked account; the web3 contract at its address."""
    compiled = artifact(name)
    contract = w3.eth.contract(abi=compiled["abi"], bytecode=compiled["bytecode"])
    receipt = w3.eth.wait_for_transaction_receipt(contract.constructor(*args).transact({"from": sender}))
    if receipt["status"] != 1:
        raise DevnetError(f"deploying {name} failed")
    return w3.eth.contract(address=receipt["contractAddress"], abi=compiled["abi"])


def deploy(chain: Chain) -> dict:
    """Deploy everything on a fresh devnet; returns what was deployed where."""
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url, request_kwargs={"timeout": 10}))
    accounts = w3.eth.accounts
    deployer = accounts[0]
    if w3.eth.get_transaction_count(deployer) != 0:
        raise DevnetError(
            f"{chain.name} at {chain.rpc_url} is not a fresh node: its deployer already sent transactions"
        )
    w3.provider.make_request(RPCEndpoint("evm_setAutomine"), [True])
    # Multicall3 where every real chain has it (the x402 facilitator deploys a payer's ERC-6492 wallet and
    # moves its tokens in one call through it).
    w3.provider.make_request(
        RPCEndpoint("anvil_setCode"), [MULTICALL3_ADDRESS, artifact("Multicall3")["deployedBytecode"]]
    )
    factory = deploy_contract(w3, "DepositFactory", deployer, sender=deployer)
    if factory.address != chain.factory_address:
        raise DevnetError(f"the factory landed at {factory.address}, not at {chain.factory_address}")
    tokens = {
        symbol: (
            deploy_contract(
                w3, "StableToken", name, symbol, decimals, deployer, SIGNATURE_TOKENS[symbol], sender=deployer
            )
            if symbol in SIGNATURE_TOKENS
            else deploy_contract(w3, "TestToken", name, symbol, decimals, deployer, sender=deployer)
        )
        for symbol, name, decimals, _ in TOKENS
    }
    usdc = tokens["dUSDC"].address
    contracts = {
        "DepositFactory": factory.address,
        **{symbol: token.address for symbol, token in tokens.items()},
        "BalanceReader": deploy_contract(w3, "BalanceReader", sender=deployer).address,
        "PricedNFT721": deploy_contract(w3, "PricedNFT721", usdc, 5 * 10**6, sender=deployer).address,
        "PricedNFT1155": deploy_contract(w3, "PricedNFT1155", usdc, 1 * 10**6, sender=deployer).address,
        "Tournament": deploy_contract(w3, "Tournament", usdc, 10 * 10**6, sender=deployer).address,
        "AlwaysReverts": deploy_contract(w3, "AlwaysReverts", sender=deployer).address,
    }
    last = None
    for (_, _, decimals, _), token in zip(TOKENS, tokens.values(), strict=True):
        for index in (*PAYERS, SOLVER):
            last = token.functions.mint(accounts[index], MINT_WHOLE_UNITS * 10**decimals).transact(
                {"from": deployer}
            )
    if last is not None:
        w3.eth.wait_for_transaction_receipt(last)
    w3.provider.make_request(RPCEndpoint("evm_setIntervalMining"), [BLOCK_SECONDS])
    return {"chain_id": chain.chain_id, "name": chain.name, "rpc_url": chain.rpc_url, "contracts": contracts}


def token_list(deployments: list[dict]) -> dict:
    """The devnet tokens in the common token-list format, for `manage.py load_tokens`."""
    entries = []
    for deployment in deployments:
        chain_id = deployment["chain_id"]
        entries.append(
            {
                "chainId": chain_id,
                "address": NATIVE,
                "symbol": "ETH",
                "name": "Ether (devnet)",
                "decimals": 18,
                "extensions": {"usdPrice": NATIVE_USD_PRICE},
            }
        )
        for symbol, name, decimals, price in TOKENS:
            entries.append(
                {
                    "chainId": chain_id,
                    "address": deployment["contracts"][symbol],
                    "symbol": symbol,
                    "name": name,
                    "decimals": decimals,
                    "extensions": {"usdPrice": price}
                    | (
                        {"eip3009": True, "eip712Name": name, "eip712Version": SIGNATURE_TOKENS[symbol]}
                        if symbol in SIGNATURE_TOKENS
                        else {}
                    ),
                }
            )
    return {"name": "Devnet tokens", "tokens": entries}


def deployments_path() -> Path:
    return Path(settings.VAR_DIR) / "devnets.json"


def deployed_rpc_url(chain: Chain) -> str | None:
    """Where `make run` last started the devnet of `chain` (VAR_DIR/devnets.json), if it did."""
    try:
        deployments = json.loads(deployments_path().read_text())
    except (OSError, ValueError):
        return None
    for deployment in deployments if isinstance(deployments, list) else []:
        if isinstance(deployment, dict) and deployment.get("chain_id") == chain.chain_id:
            return str(deployment.get("rpc_url") or "") or None
    return None


def token_list_path() -> Path:
    return Path(settings.VAR_DIR) / "devnet-tokens.json"


def forget_devnet_transactions(chain_ids: list[int]) -> int:
    """A fresh devnet knows none of the transactions of its previous life: restart its nonces from the chain,
    mark what was still in flight there failed (the orders they served show on the stuck list), read it from
    its first block, and keep the outbox and the watcher from taking the old life's blocks for a reorg (the
    outbox would send its finished transactions again, the watcher withdraw the old deposits)."""
    from chains.models import ChainCursor, Deposit, OutboxTx, SenderNonce, WatchedAddress

    SenderNonce.objects.filter(chain_id__in=chain_ids).delete()
    # The old life's deposits were in blocks the new node will number alike but never hold: with their block
    # hashes gone, the watcher's reorg check leaves them alone (it would withdraw each one, and the ledger
    # post their reversals into the new life's books).
    Deposit.objects.filter(chain_id__in=chain_ids).exclude(block_hash="").update(block_hash="")
    ChainCursor.objects.filter(chain_id__in=chain_ids).delete()
    # The balances the watcher kept are the old life's: read them again (else a fresh, empty address looks
    # like money that left it).
    WatchedAddress.objects.filter(chain_id__in=chain_ids).update(native_balance=None)
    OutboxTx.objects.filter(chain_id__in=chain_ids).exclude(block_hash="").update(block_hash="")
    return OUTBOX.move(
        OutboxTx.objects.filter(chain_id__in=chain_ids),
        from_=IN_FLIGHT,
        to=OutboxTx.Status.FAILED,
        error="the devnet restarted: this transaction is gone",
    )


def deploy_all() -> list[dict]:
    deployments = [deploy(chain) for chain in devnet_chains()]
    forget_devnet_transactions([deployment["chain_id"] for deployment in deployments])
    deployments_path().write_text(json.dumps(deployments, indent=2) + "\n")
    token_list_path().write_text(json.dumps(token_list(deployments), indent=2) + "\n")
    return deployments


def devnet_private_key(index: int) -> str:
    """The key of anvil's account `index` (0: the vault, 9: the solver), for the workers of `make run`."""
    from eth_account import Account

    Account.enable_unaudited_hdwallet_features()
    account = Account.from_mnemonic(ANVIL_MNEMONIC, account_path=f"m/44'/60'/0'/0/{index}")
    return "0x" + bytes(account.key).hex()


def devnet_signer_environment() -> dict[str, str]:
    """VAULT_PRIVATE_KEY and SOLVER_PRIVATE_KEY of the devnets' accounts 0 and 9, for worker processes."""
    return {"VAULT_PRIVATE_KEY": devnet_private_key(0), "SOLVER_PRIVATE_KEY": devnet_private_key(SOLVER)}


def example_swap_order(src_chain: int = 31337, dst_chain: int = 31338) -> dict:
    """The README's devnet order (`POST /orders`): 10 dUSDC on one devnet for dUSDC on the other, to a fixed
    recipient; what `make run`'s checks and the image test pay. dUSDC is the first contract the devnets'
    deployer makes, so its address is the same on both (and on every fresh devnet)."""
    dusdc = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
    token = {"address": dusdc, "symbol": "dUSDC", "name": "Devnet USD Coin", "decimals": 6, "metadata": {}}
    return {
        "type": "swap",
        "recipientAddress": "0x1111111111111111111111111111111111111111",
        "srcChain": src_chain,
        "dstChain": dst_chain,
        "srcTokenAddress": dusdc,
        "dstTokenAddress": dusdc,
        "srcAmount": "10000000",
        "payload": {"expectedDstAmount": "9900000"},
        "creatorAddress": "0x2222222222222222222222222222222222222222",
        "metadata": {
            "srcToken": {"chainId": src_chain, **token},
            "dstToken": {"chainId": dst_chain, **token},
        },
    }
