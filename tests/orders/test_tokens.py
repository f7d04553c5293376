import json

import pytest
from django.core.management import CommandError, call_command

from chains.models import Token
from tests.orders.conftest import USDC_BASE

pytestmark = pytest.mark.django_db

CHAINS = {1, 10, 56, 137, 8453, 42161, 43114, 8333}


def test_shipped_list_covers_every_chain_with_native_and_wrapped_assets(tokens):
    for chain in CHAINS:
        symbols = set(Token.objects.filter(chain_id=chain).values_list("symbol", flat=True))
        assert any(s.startswith("W") for s in symbols), chain
        assert Token.objects.filter(chain_id=chain, address="0x" + "0" * 40).exists(), chain
    for chain in CHAINS - {8333}:
        symbols = set(Token.objects.filter(chain_id=chain).values_list("symbol", flat=True))
        assert {"USDC", "USDT"} <= symbols, chain
    assert Token.objects.filter(chain_id=8453, symbol="B3").exists()


def test_search_by_symbol_or_name_case_insensitive(api_client, tokens):
    by_symbol = api_client.get("/chains/8453/tokens?term=usdc").json()["data"]
    by_name = api_client.get("/chains/8453/tokens?term=tether").json()["data"]
    assert [t["symbol"] for t in by_symbol] == ["USDC"]
    assert [t["symbol"] for t in by_name] == ["USDT"]
    assert by_symbol[0] == {
        "chainId": 8453,
        "address": USDC_BASE,
        "symbol": "USDC",
        "name": "USD Coin",
        "decimals": 6,
        "metadata": {},
    }


def test_search_by_exact_address_in_any_case(api_client, tokens):
    data = api_client.get(f"/chains/8453/tokens?term={USDC_BASE.lower()}").json()["data"]
    assert [t["address"] for t in data] == [USDC_BASE]


def test_limit_and_unknown_chain(api_client, tokens):
    assert len(api_client.get("/chains/8453/tokens?limit=2").json()["data"]) == 2
    unknown = api_client.get("/chains/777/tokens")  # not an empty list: a chain nobody can pay on (issue 64)
    assert unknown.status_code == 404 and unknown.json()["success"] is False
    assert "777 is not a chain this service knows" in unknown.json()["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/chains/0/tokens",
        "/chains/8453/tokens?limit=0",
        "/chains/8453/tokens?limit=x",
        "/chains/ethereum/tokens",
        "/chains/-1/tokens",
        "/chains/1.5/tokens",
        "/chains/%EF%BC%91/tokens",
        "/chains/" + "9" * 200 + "/tokens",
    ],
)
def test_bad_chain_or_limit_is_400(api_client, path):
    response = api_client.get(path)
    assert response.status_code == 400
    assert response.json()["success"] is False


def test_load_tokens_accepts_a_token_list_and_updates_in_place(tmp_path, tokens, capsys):
    doc = {
        "name": "extra",
        "tokens": [
            {
                "chainId": 8453,
                "address": USDC_BASE.lower(),
                "symbol": "USDC",
                "name": "USDC (Base)",
                "decimals": 6,
                "logoURI": "https://example.com/usdc.png",
            },
            {
                "chainId": 8453,
                "address": "0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb",
                "symbol": "DAI",
                "name": "Dai Stablecoin",
                "decimals": 18,
                "extensions": {"usdPrice": "1"},
            },
        ],
    }
    path = tmp_path / "list.json"
    path.write_text(json.dumps(doc))

    call_command("load_tokens", str(path))

    assert "1 tokens created, 1 updated" in capsys.readouterr().out
    usdc = Token.objects.get(chain_id=8453, address=USDC_BASE)
    assert (usdc.name, usdc.logo_uri) == ("USDC (Base)", "https://example.com/usdc.png")
    assert Token.objects.filter(symbol="DAI").count() == 1


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"tokens": [{"chainId": 1, "address": "0x1", "symbol": "X", "name": "X", "decimals": 1}]}),
        json.dumps({"tokens": [{"chainId": 1}]}),
        json.dumps({"name": "no tokens"}),
    ],
)
def test_load_tokens_refuses_bad_files_and_writes_nothing(tmp_path, db, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError):
        call_command("load_tokens", str(path))
    assert not Token.objects.exists()


def test_a_chain_id_that_is_not_a_number_is_a_bad_request_naming_it(api_client):
    response = api_client.get("/chains/base/tokens")
    assert response.status_code == 400
    assert response.json()["success"] is False and "chainId" in response.json()["message"]
