"""Test mode: a live organization's sandbox, reached with `svc_test_` keys, transacts on test chains only and
never mixes its objects with the live organization's (platform_api.testmode)."""

from __future__ import annotations

import io
import json
import uuid
from decimal import Decimal

import pytest
from django.core.management import call_command

from chains.evm import to_checksum_address
from chains.models import Chain as ChainRow
from chains.registry import registry_forget
from checkout.models import CheckoutSession, PaymentLink
from core.errors import InvalidRequest
from orders.creation import order_create
from orders.inputs import OrderRequest
from orders.models import Order
from platform_api.models import ApiKey, Organization
from platform_api.testmode import organization_sandbox
from quickpay.models import QuickPayment
from tests.conftest import client_for
from tests.factories import TokenFactory, TransactionFactory, WebhookEndpointFactory, make_api_key
from tests.orders.conftest import RECIPIENT, USDC_BASE
from webhooks.events import emit_event
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent

pytestmark = pytest.mark.django_db

DUSDC = to_checksum_address("0x" + "d5" * 20)
DEVNET_FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
QUICK_PAY = "/api/v1/quick-pay"


@pytest.fixture
def dusdc(tokens):
    return TokenFactory(chain_id=31337, address=DUSDC, symbol="dUSDC", decimals=6, usd_price=Decimal(1))


@pytest.fixture
def sandbox(organization, dusdc):
    return organization_sandbox(organization)


@pytest.fixture
def test_client(sandbox):
    return client_for(make_api_key(sandbox, permissions=["admin"])[1])


def session_body(chain_id: int, token: str, **fields):
    """A checkout session's create body: a link's less its name."""
    return {k: v for k, v in link(chain_id, token, **fields).items() if k != "name"}


def link(chain_id: int, token: str, **fields):
    return {
        "name": "Sticker pack",
        "token_address": token,
        "chain_id": chain_id,
        "recipient_address": RECIPIENT,
        "amount": "5000000",
        **fields,
    }


def test_create_api_key_test_makes_a_test_key_of_the_organizations_one_test_mode(organization, dusdc):
    keys = []
    for name in ("laptop", "ci"):
        out = io.StringIO()
        call_command("create_api_key", org="acme", name=name, permissions="write", test=True, stdout=out)
        keys.append(out.getvalue().strip().splitlines()[-1])

    assert all(key.startswith("svc_test_") for key in keys)
    sandbox = Organization.objects.get(sandbox_of=organization)
    assert sandbox.livemode is False and organization.livemode is True
    assert (sandbox.default_chain_id, sandbox.default_token_address) == (31337, DUSDC)
    assert set(ApiKey.objects.filter(organization=sandbox).values_list("name", flat=True)) == {"laptop", "ci"}
    assert Organization.objects.count() == 2  # one test mode, however many keys
    answer = client_for(keys[0]).get("/api/v1/organization").json()
    assert (answer["id"], answer["livemode"]) == (sandbox.id, False)
    assert make_api_key(organization)[1].startswith("svc_live_")


def test_a_test_key_names_test_chains_only_and_a_refusal_changes_nothing(admin_client, test_client, tokens):
    refused = test_client.post("/api/v1/payment-links", link(8453, USDC_BASE), format="json")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["param"] == "chain_id" and "Chain 8453 is a live chain" in error["message"]
    assert "31337" in error["message"]
    quick = {"amount": "1000", "token_address": USDC_BASE, "chain_id": 8453, "recipient_address": RECIPIENT}
    for method, path, body, param in (
        (test_client.post, "/api/v1/checkout-sessions", session_body(8453, USDC_BASE), "chain_id"),
        (test_client.post, QUICK_PAY, quick, "chain_id"),
        (test_client.patch, "/api/v1/organization", {"default_chain_id": 1}, "default_chain_id"),
    ):
        answer = method(path, body, format="json")
        assert answer.status_code == 400 and answer.json()["error"]["param"] == param, (path, answer.content)
    assert not PaymentLink.objects.exists() and not CheckoutSession.objects.exists()
    assert not QuickPayment.objects.exists()

    assert test_client.post("/api/v1/payment-links", link(31337, DUSDC), format="json").status_code == 201
    assert admin_client.post("/api/v1/payment-links", link(8453, USDC_BASE), format="json").status_code == 201


def test_an_order_of_a_test_mode_organization_goes_through_test_chains_whatever_made_it(
    sandbox, organization
):
    """The one rule behind the fields: a payer on a sandbox's page, a quick payment, an x402 offer."""
    asked = OrderRequest(
        type="swap",
        src_chain=8453,
        dst_chain=31337,
        src_token_address=USDC_BASE,
        dst_token_address=DUSDC,
        src_amount=1_000_000,
        recipient_address=RECIPIENT,
        payload={},
    )
    with pytest.raises(InvalidRequest) as refused:
        order_create(organization=sandbox, request=asked, payer_ip="127.0.0.1", order_id=uuid.uuid4())
    assert refused.value.field == "srcChain" and not Order.objects.exists()


def test_test_mode_objects_never_mix_with_live_ones(admin_client, test_client, organization, sandbox, tokens):
    live_link = admin_client.post("/api/v1/payment-links", link(8453, USDC_BASE), format="json").json()
    test_link = test_client.post("/api/v1/payment-links", link(31337, DUSDC), format="json").json()
    for owner in (organization, sandbox):
        WebhookEndpointFactory(organization=owner, events=["*"])
    paid = {
        client: TransactionFactory(organization=owner, status="completed", chain_id=chain_id).id
        for client, owner, chain_id in ((admin_client, organization, 8453), (test_client, sandbox, 31337))
    }
    live_event = emit_event(
        organization=organization, event_type="payment.completed", data={"id": "txn_live"}
    )
    test_event = emit_event(organization=sandbox, event_type="payment.completed", data={"id": "txn_test"})

    for client, mine, theirs in ((admin_client, live_link, test_link), (test_client, test_link, live_link)):
        links = [row["id"] for row in client.get("/api/v1/payment-links").json()["data"]]
        assert links == [mine["id"]]
        assert client.get(f"/api/v1/payment-links/{theirs['id']}").status_code == 404
        assert len(client.get("/api/v1/webhooks").json()["data"]) == 1
        assert client.get("/api/v1/analytics/overview").json()["payment_links"]["total"] == 1
        assert [t["id"] for t in client.get("/api/v1/transactions").json()["data"]] == [paid[client]]
    assert [e["id"] for e in admin_client.get("/api/v1/webhook-events").json()["data"]] == [live_event.id]
    listed = test_client.get("/api/v1/webhook-events").json()["data"]
    assert [(e["id"], e["livemode"]) for e in listed] == [(test_event.id, False)]
    assert test_client.post(f"/api/v1/webhook-events/{live_event.id}/resend").status_code == 404

    bodies = {
        d.endpoint.organization_id: json.loads(d.body)
        for d in WebhookDelivery.objects.select_related("endpoint")
    }
    assert bodies[organization.id]["livemode"] is True and bodies[sandbox.id]["livemode"] is False
    assert bodies[sandbox.id]["data"] == {"id": "txn_test"}
    assert WebhookEndpoint.objects.filter(organization=sandbox).count() == 1
    assert WebhookEvent.objects.get(pk=test_event.pk).livemode is False


def test_the_test_helpers_answer_test_keys_only(admin_client, test_client, sandbox):
    session = test_client.post("/api/v1/checkout-sessions", session_body(31337, DUSDC), format="json").json()

    refused = admin_client.post(f"/api/v1/test-helpers/checkout-sessions/{session['id']}/pay")
    assert refused.status_code == 403 and "svc_test_" in refused.json()["error"]["message"]
    other = admin_client.post("/api/v1/test-helpers/refunds/re_nothing/fund")
    assert other.status_code == 403
    assert not Order.objects.exists()

    assert test_client.post("/api/v1/test-helpers/checkout-sessions/cs_nothing/pay").status_code == 404
    test_client.post(f"/api/v1/checkout-sessions/{session['id']}/expire")
    closed = test_client.post(f"/api/v1/test-helpers/checkout-sessions/{session['id']}/pay")
    assert closed.status_code == 400 and "only an open one" in closed.json()["error"]["message"]
    bad = test_client.post(
        f"/api/v1/test-helpers/checkout-sessions/{session['id']}/pay", {"amount": "-1"}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "amount"
    assert not Order.objects.exists()


def test_one_test_helper_call_pays_at_most_its_cap_from_the_shared_wallet(test_client, settings):
    """The probe's one call moved 900,000 dUSDC of the shared payer account, and every tenant's helper then
    failed (issue 64, item 7)."""
    settings.TEST_HELPER_MAX_TOKENS = 1000
    session = test_client.post("/api/v1/checkout-sessions", session_body(31337, DUSDC), format="json").json()

    drained = test_client.post(
        f"/api/v1/test-helpers/checkout-sessions/{session['id']}/pay", {"amount": "1000000001"}, format="json"
    )

    assert drained.status_code == 400
    error = drained.json()["error"]
    assert error["param"] == "amount" and "at most 1000000000" in error["message"]
    assert not Order.objects.exists()


def test_a_test_mode_payers_page_says_so_and_offers_test_chains_only(
    client, test_client, admin_client, tokens
):
    ChainRow.objects.filter(pk=8453).update(factory_address=DEVNET_FACTORY)  # Base takes payments too
    registry_forget()
    test_link = test_client.post("/api/v1/payment-links", link(31337, DUSDC), format="json").json()
    live_link = admin_client.post("/api/v1/payment-links", link(31337, DUSDC), format="json").json()

    page = client.get(f"/pay/{test_link['short_code']}").content.decode()
    assert "Test mode" in page and "no real money moves" in page
    assert f'value="31337:{DUSDC}"' in page and "8453:" not in page
    live_page = client.get(f"/pay/{live_link['short_code']}").content.decode()
    assert "no real money moves" not in live_page and f'value="8453:{USDC_BASE}"' in live_page
