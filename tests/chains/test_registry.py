"""GET /chains: the registry on the order interface; devnets carry their RPC URL, real chains never do."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from chains.registry import chain_get, chains

pytestmark = pytest.mark.django_db


def test_development_lists_both_devnets_and_the_token_list_chains(api_client, settings):
    body = api_client.get("/chains").json()

    assert (body["success"], body["statusCode"]) == (True, 200)
    by_id = {chain["chainId"]: chain for chain in body["data"]}
    assert by_id[31337] == {
        "chainId": 31337,
        "name": "Devnet A",
        "nativeCurrency": {"symbol": "ETH", "decimals": 18},
        "confirmations": 1,
        "devnet": True,
        "rpcUrl": "http://127.0.0.1:8545",
    }
    assert by_id[31338]["name"] == "Devnet B" and by_id[31338]["rpcUrl"] == "http://127.0.0.1:8546"
    assert set(settings.SUPPORTED_CHAIN_IDS) == set(by_id)  # orders may use every chain listed
    assert by_id[8453]["name"] == "Base" and by_id[8453]["devnet"] is False


def test_a_real_chains_rpc_url_is_never_shown(api_client, settings):
    settings.CHAINS = [
        {"chain_id": 8453, "name": "Base", "native_symbol": "ETH", "rpc_url": "https://rpc.example/KEY-123"}
    ]
    body = api_client.get("/chains").json()
    assert body["data"] == [
        {
            "chainId": 8453,
            "name": "Base",
            "nativeCurrency": {"symbol": "ETH", "decimals": 18},
            "confirmations": 12,
            "devnet": False,
        }
    ]
    assert "KEY-123" not in str(body)


@pytest.mark.parametrize(
    "entry",
    [
        {"chain_id": 0, "name": "x", "native_symbol": "ETH"},
        {"chain_id": 5, "name": "", "native_symbol": "ETH"},
        {"chain_id": 5, "name": "x", "native_symbol": "ETH", "confirmations": -1},
        {"chain_id": 5, "name": "x", "native_symbol": "ETH", "factory_address": "0x12"},
        {"chain_id": 5, "name": "x", "native_symbol": "ETH", "colour": "blue"},
    ],
)
def test_a_bad_registry_entry_is_refused_with_its_reason(settings, entry):
    settings.CHAINS = [entry]
    with pytest.raises(ImproperlyConfigured):
        chains()


def test_a_chain_listed_twice_is_refused(settings):
    settings.CHAINS = [{"chain_id": 5, "name": "x", "native_symbol": "ETH"}] * 2
    with pytest.raises(ImproperlyConfigured):
        chain_get(5)
