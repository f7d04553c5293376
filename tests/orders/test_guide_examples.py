"""The order interface guide's quote and order for each contract type (docs/guides/order-interface.md), run as written on the two devnets, down to execution."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orders.types import CALLS_CONTRACT
from tests.orders.devnet_checkout import drive, pay, random_address

pytestmark = pytest.mark.django_db

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "order-interface.md"
CURL = re.compile(
    r"curl -s -X POST \$B(/orders(?:/quote)?) -H \"Content-Type: application/json\" -d '(.*?)'", re.S
)
CONTRACT_TYPES = sorted(CALLS_CONTRACT)  # every type that calls a contract (orders.types)


def guide_examples() -> dict[str, dict[str, dict]]:
    """{order type: {"/orders/quote": body, "/orders": body}} from the guide's shell blocks."""
    found: dict[str, dict[str, dict]] = {}
    for block in re.findall(r"```sh\n(.*?)```", GUIDE.read_text(), re.S):
        for path, body in CURL.findall(block):
            data = json.loads(body)
            if data.get("type") in CONTRACT_TYPES:
                found.setdefault(data["type"], {})[path] = data
    return found


def test_the_guide_has_a_quote_and_an_order_for_each_contract_type():
    examples = guide_examples()
    assert sorted(examples) == sorted(CONTRACT_TYPES)
    assert all(set(pair) == {"/orders/quote", "/orders"} for pair in examples.values())


@pytest.mark.parametrize("order_type", CONTRACT_TYPES)
def test_each_contract_types_guide_example_quotes_its_amount_and_executes(
    devnets_registry, api_client, settings, order_type
):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0  # no worker here: the poll signs what was asked for
    (a, deployment_a), (_, deployment_b) = devnets_registry
    assert deployment_b["contracts"]["Tournament"] in GUIDE.read_text()  # the addresses of a fresh make run
    examples = guide_examples()[order_type]
    recipient = random_address()  # a player joins once: the test's own recipient, everything else as written
    quote = api_client.post(
        "/orders/quote", examples["/orders/quote"] | {"recipientAddress": recipient}, format="json"
    )
    assert quote.status_code == 200, quote.content
    order_body = examples["/orders"] | {"recipientAddress": recipient}
    # The guide's srcAmount is what its quote asks.
    assert quote.json()["data"]["currencyIn"]["amount"] == order_body["srcAmount"]
    created = api_client.post("/orders", order_body, format="json")
    assert created.status_code == 200, created.content
    order_id = created.json()["data"]["id"]
    pay(order_id, (a, deployment_a))
    order = drive(order_id)
    assert order.status == "executed", order.error_details


def test_the_devnet_example_order_is_the_readmes_swap():
    from chains.devnet import example_swap_order

    orders = [
        json.loads(body)
        for block in re.findall(r"```sh\n(.*?)```", GUIDE.read_text(), re.S)
        for path, body in CURL.findall(block)
        if path == "/orders" and json.loads(body).get("type") == "swap"
    ]
    assert orders, "the guide has a swap order"
    readme = {key: value for key, value in orders[0].items() if key != "checkoutSessionId"}
    assert example_swap_order() == readme
