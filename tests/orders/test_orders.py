import json
import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from chains.families import deposit_address
from orders import onramps
from orders.lifecycle import orders_expire_unpaid
from orders.models import Order
from orders.tasks import expire_unpaid_orders
from tests.conftest import client_for
from tests.factories import CheckoutSessionFactory, OrganizationFactory, make_api_key
from tests.orders.conftest import CREATOR, PAYLOADS, order_body
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


def _post(client, body, **extra):
    return client.post("/orders", body, format="json", **extra)


@pytest.mark.parametrize("order_type", list(PAYLOADS))
def test_every_order_type_is_created_in_the_contract_shape(api_client, tokens, order_type):
    response = _post(api_client, order_body(order_type))

    assert response.status_code == 200, response.json()
    data = response.json()["data"]
    order = Order.objects.get(pk=data["id"])
    assert data["type"] == order_type
    assert data["status"] == "scanning_deposit_transaction"
    assert data["globalAddress"] == deposit_address(
        chain_id=8453, kind="order", identifier=data["id"], field="srcChain"
    )
    assert data["expiredAt"] - data["createdAt"] == 900_000
    assert data["payload"] == PAYLOADS[order_type]
    assert data["srcAmount"] == "100000000"
    assert data["creatorAddress"] == CREATOR
    assert data["fee"]["type"] == "standard_fee"
    assert data["fee"]["serviceFeeBps"] == 80  # $100 of USDC
    for key in (
        "filledAt",
        "receivedDepositAt",
        "errorDetails",
        "onrampMetadata",
        "oneClickBuyUrl",
        "vendorBPaymentIntentId",
        "settlement",
        "partnerId",
    ):
        assert data[key] is None, key
    assert order.organization is None


def test_each_order_has_its_own_deposit_address(api_client, tokens):
    first = _post(api_client, order_body()).json()["data"]["globalAddress"]
    second = _post(api_client, order_body()).json()["data"]["globalAddress"]
    assert first != second


BAD_ORDERS = [
    ({"type": "teleport"}, "type"),
    ({"type": None}, "type"),
    ({"recipientAddress": "0x123"}, "recipientAddress"),
    ({"srcChain": "8453"}, "srcChain"),
    ({"srcChain": -1}, "srcChain"),
    ({"dstChain": 999}, "dstChain"),
    ({"srcAmount": "1e6"}, "srcAmount"),
    ({"srcAmount": "-5"}, "srcAmount"),
    ({"srcAmount": 100}, "srcAmount"),
    ({"payload": {}}, "payload.expectedDstAmount"),
    ({"payload": {"expectedDstAmount": "abc"}}, "payload.expectedDstAmount"),
    ({"metadata": {}}, "metadata.srcToken"),
    ({"clientReferenceId": "has spaces"}, "clientReferenceId"),
    ({"clientReferenceId": "x" * 256}, "clientReferenceId"),
    ({"creatorAddress": "nope"}, "creatorAddress"),
    (
        {
            "onramp": {
                "vendor": "vendorZ",
                "paymentMethod": "card",
                "country": "US",
                "redirectUrl": "https://a.b/c",
            }
        },
        "onramp.vendor",
    ),
    ({"onramp": {"vendor": "vendorA"}}, "onramp.paymentMethod"),
    ({"checkoutSessionId": "123"}, "checkoutSessionId"),
    ({"srcTokenAddress": "0x4200000000000000000000000000000000000006"}, "metadata.srcToken"),
]


@pytest.mark.parametrize(("change", "field"), BAD_ORDERS)
def test_bad_orders_are_400_naming_the_field_and_store_nothing(api_client, tokens, change, field):
    body = {k: v for k, v in {**order_body(), **change}.items() if v is not None}
    response = _post(api_client, body)
    assert response.status_code == 400
    assert response.json()["success"] is False
    assert response.json()["message"].startswith(field), response.json()["message"]
    assert not Order.objects.exists()


def test_no_payment_is_taken_on_a_chain_without_a_deposit_factory(api_client, tokens, settings):
    settings.CHAINS = [{**c, "factory_address": ""} if c["chain_id"] == 8453 else c for c in settings.CHAINS]

    response = _post(api_client, order_body())

    assert response.status_code == 400
    assert response.json()["message"].startswith("srcChain"), response.json()["message"]
    assert "no deposit factory" in response.json()["message"]
    assert not Order.objects.exists()
    # ... and the quote answers as the order does, rather than 200 for a payment that would be refused
    quote = api_client.post(
        "/orders/quote",
        json.dumps(
            {k: order_body()[k] for k in ("srcChain", "dstChain", "srcTokenAddress", "dstTokenAddress")}
            | {"type": "swap", "tradeType": "EXACT_INPUT", "amount": "100000000"}
        ),
        content_type="application/json",
    )
    assert quote.status_code == 400, quote.json()
    assert quote.json()["message"].startswith("srcChain") and "no deposit factory" in quote.json()["message"]


@pytest.mark.parametrize("order_type", ["swap", "x402_swap", "custom_exact_in"])
def test_an_order_whose_expected_amount_its_payment_cannot_buy_is_refused_at_creation(
    api_client, tokens, order_type
):
    """10 USDC for an expectedDstAmount of 99 USDC was accepted, and refunded only after the payer paid
    (issue 64, item 12): a fresh quote refuses it now."""
    body = order_body(order_type, srcAmount="10000000")
    body["payload"]["expectedDstAmount"] = "99000000"

    response = _post(api_client, body)

    assert response.status_code == 400
    message = response.json()["message"]
    assert message.startswith("payload.expectedDstAmount") and "more than srcAmount 10000000 buys" in message
    assert not Order.objects.exists()
    body["payload"]["expectedDstAmount"] = "9000000"  # what it does buy, after the fee
    assert _post(api_client, body).status_code == 200


@pytest.mark.parametrize(
    ("order_type", "payload_change", "field"),
    [
        ("custom", {"to": "0x1"}, "payload.to"),
        ("custom", {"data": "0xabc"}, "payload.data"),
        ("custom_exact_in", {"functionAbi": "not json"}, "payload.functionAbi"),
        ("custom_exact_in", {"functionArgs": "x"}, "payload.functionArgs"),
        ("mint_nft", {"contractType": "erc20"}, "payload.contractType"),
        ("mint_nft", {"tokenId": "7"}, "payload.tokenId"),
        ("join_tournament", {"entryPrice": None}, "payload.entryPrice"),
        ("fund_tournament", {"fundAmount": "0"}, "payload.fundAmount"),
    ],
)
def test_per_type_payload_validation(api_client, tokens, order_type, payload_change, field):
    body = order_body(order_type)
    body["payload"].update(payload_change)
    body["payload"] = {k: v for k, v in body["payload"].items() if v is not None}
    response = _post(api_client, body)
    assert response.status_code == 400
    assert response.json()["message"].startswith(field), response.json()["message"]
    assert not Order.objects.exists()


def test_mint_nft_requires_nft_metadata(api_client, tokens):
    body = order_body("mint_nft")
    del body["metadata"]["nft"]
    response = _post(api_client, body)
    assert response.status_code == 400
    assert response.json()["message"] == "metadata.nft is required."


def test_order_for_a_session_links_it_and_a_second_order_is_409(api_client, tokens):
    session = CheckoutSessionFactory()
    first = _post(api_client, order_body(checkoutSessionId=str(session.pk)))
    second = _post(api_client, order_body(checkoutSessionId=str(session.pk)))

    assert first.status_code == 200
    assert first.json()["data"]["checkoutSessionId"] == str(session.pk)
    assert second.status_code == 409
    assert Order.objects.count() == 1
    session.refresh_from_db()
    assert session.status == "open"


@pytest.mark.parametrize("status", ["expired", "complete", "processing"])
def test_order_for_a_session_that_is_not_open_is_400(api_client, tokens, status):
    session = CheckoutSessionFactory(status=status)
    response = _post(api_client, order_body(checkoutSessionId=str(session.pk)))
    assert response.status_code == 400
    assert not Order.objects.exists()


def test_order_for_an_unknown_session_is_400(api_client, tokens):
    response = _post(api_client, order_body(checkoutSessionId=str(uuid.uuid4())))
    assert response.status_code == 400
    assert response.json()["message"].startswith("checkoutSessionId")


def test_order_inherits_the_organization_of_its_session_or_key(api_client, tokens, organization):
    session = CheckoutSessionFactory(organization=organization)
    via_session = _post(api_client, order_body(checkoutSessionId=str(session.pk))).json()["data"]["id"]
    _, raw = make_api_key(organization, permissions=["write"])
    via_key = _post(client_for(raw), order_body()).json()["data"]["id"]
    assert set(Order.objects.values_list("organization", flat=True)) == {organization.pk}
    assert {str(o) for o in Order.objects.values_list("pk", flat=True)} == {via_session, via_key}


def test_another_organizations_session_is_not_found(api_client, tokens, organization):
    session = CheckoutSessionFactory(organization=OrganizationFactory(slug="rival"))
    _, raw = make_api_key(organization, permissions=["write"])
    response = _post(client_for(raw), order_body(checkoutSessionId=str(session.pk)))
    assert response.status_code == 400
    assert not Order.objects.exists()


ONRAMP = {
    "vendor": "vendorB",
    "paymentMethod": "card",
    "country": "US",
    "redirectUrl": "https://shop.example/back",
}


def test_payer_ip_and_fingerprint_are_kept_but_only_shown_in_the_comprehensive_view(
    api_client, tokens, organization
):
    _, raw = make_api_key(organization, permissions=["read", "write"])
    key_client = client_for(raw)
    order_id = _post(
        key_client,
        order_body(onramp=ONRAMP),
        REMOTE_ADDR="203.0.113.99",
        HTTP_X_FINGERPRINT_REQUEST_ID="req-1",
        HTTP_X_FINGERPRINT_VISITOR_ID="vis-1",
    ).json()["data"]["id"]

    public = api_client.get(f"/orders/{order_id}").json()["data"]["order"]["onrampMetadata"]
    listed = api_client.get(f"/orders?creatorAddress={CREATOR}").json()["data"][0]["onrampMetadata"]
    full = key_client.get(f"/orders/{order_id}/comprehensive").json()["data"]["order"]["onrampMetadata"]

    assert public == listed == ONRAMP
    assert full == {
        **ONRAMP,
        "ipAddress": "203.0.113.99",
        "fingerprint": {"requestId": "req-1", "visitorId": "vis-1"},
    }


def test_comprehensive_view_needs_a_key_of_the_orders_organization(api_client, tokens, organization):
    _, raw = make_api_key(organization, permissions=["write"])
    order_id = _post(client_for(raw), order_body()).json()["data"]["id"]
    _, rival = make_api_key(OrganizationFactory(slug="rival"), permissions=["admin"])

    assert api_client.get(f"/orders/{order_id}/comprehensive").status_code == 401
    assert client_for(rival).get(f"/orders/{order_id}/comprehensive").status_code == 404
    assert client_for("svc_live_" + "x" * 40).get(f"/orders/{order_id}/comprehensive").status_code == 401
    assert client_for(raw).get(f"/orders/{order_id}/comprehensive").status_code == 200


def test_card_orders_are_503_until_the_vendor_is_configured(api_client, tokens):
    response = _post(api_client, order_body(onramp={**ONRAMP, "vendor": "vendorB-web2"}))
    assert response.status_code == 503
    assert "VENDOR_B_SECRET_KEY" in response.json()["message"]
    assert not Order.objects.exists()


def test_detail_has_transactions_and_points_and_rejects_bad_ids(api_client, tokens):
    order_id = _post(api_client, order_body()).json()["data"]["id"]
    data = api_client.get(f"/orders/{order_id}").json()["data"]
    assert data["order"]["id"] == order_id
    assert (data["depositTxs"], data["relayTxs"], data["refundTxs"]) == ([], [], [])
    assert data["executeTx"] is None
    assert data["points"] is None
    assert api_client.get("/orders/not-a-uuid").status_code == 400
    assert api_client.get(f"/orders/{uuid.uuid4()}").status_code == 404


def test_list_by_creator_newest_first_with_limit_and_offset(api_client, tokens):
    ids = [_post(api_client, order_body()).json()["data"]["id"] for _ in range(3)]
    _post(api_client, order_body(creatorAddress="0x" + "9" * 40))

    all_orders = api_client.get(f"/orders?creatorAddress={CREATOR.upper().replace('0X', '0x')}").json()[
        "data"
    ]
    page = api_client.get(f"/orders?creatorAddress={CREATOR}&limit=1&offset=1").json()["data"]

    assert [o["id"] for o in all_orders] == list(reversed(ids))
    assert [o["id"] for o in page] == [ids[1]]


@pytest.mark.parametrize(
    "query",
    ["", "creatorAddress=abc", f"creatorAddress={CREATOR}&limit=101", f"creatorAddress={CREATOR}&offset=-1"],
)
def test_list_rejects_bad_queries(api_client, query):
    response = api_client.get(f"/orders?{query}")
    assert response.status_code == 400
    assert response.json()["success"] is False


def test_list_is_not_n_plus_one(api_client, tokens, django_assert_max_num_queries):
    created = {_post(api_client, order_body()).json()["data"]["id"] for _ in range(5)}
    with django_assert_max_num_queries(1):
        response = api_client.get(f"/orders?creatorAddress={CREATOR}")
    assert response.status_code == 200
    listed = response.json()["data"]
    assert {order["id"] for order in listed} == created  # all five, each with its tokens, from one query
    assert all(order["metadata"]["srcToken"]["symbol"] for order in listed)


def test_unpaid_orders_expire_with_their_sessions(api_client, tokens, organization):
    session = CheckoutSessionFactory(organization=organization)
    order_id = _post(api_client, order_body(checkoutSessionId=str(session.pk))).json()["data"]["id"]
    fresh_id = _post(api_client, order_body()).json()["data"]["id"]
    Order.objects.filter(pk=order_id).update(expired_at=timezone.now() - timedelta(seconds=1))

    assert expire_unpaid_orders() == 1
    assert orders_expire_unpaid() == 0

    assert Order.objects.get(pk=order_id).status == "expired"
    assert Order.objects.get(pk=fresh_id).status == "scanning_deposit_transaction"
    session.refresh_from_db()
    assert session.status == "expired"
    assert WebhookEvent.objects.get().data["reason"] == "order_expired"


def test_detail_lists_each_kind_of_transaction_in_two_queries(api_client, tokens, django_assert_num_queries):
    """The selector reads an order and its three kinds of transaction in two queries; the read of
    GET /orders/{id} is one, of the body rendered from them (orders.bodies)."""
    from datetime import timedelta

    from django.utils import timezone

    from orders import bodies, selectors
    from orders.models import DepositTx, RefundTx, RelayTx
    from orders.representations import order_detail_data

    order = Order.objects.get(pk=_post(api_client, order_body()).json()["data"]["id"])
    other = Order.objects.get(pk=_post(api_client, order_body()).json()["data"]["id"])
    at = timezone.now()

    big = 2**255 + 7  # uint256 amounts survive the UNION, exactly, on every backend
    DepositTx.objects.create(
        order=order,
        chain=8453,
        from_address="0x" + "1" * 40,
        tx_hash="0x" + "a" * 64,
        amount=big,
        created_at=at + timedelta(seconds=2),
    )
    DepositTx.objects.create(order=order, chain=8453, tx_hash="0x" + "b" * 64, amount=5, created_at=at)
    DepositTx.objects.create(order=other, chain=8453, tx_hash="0x" + "c" * 64, amount=9, created_at=at)
    RelayTx.objects.create(order=order, chain=42161, tx_hash="0x" + "d" * 64, status="success", created_at=at)
    RefundTx.objects.create(
        order=order, chain=8453, tx_hash="0x" + "e" * 64, amount=big, status="failure", created_at=at
    )

    with django_assert_num_queries(2):
        data = order_detail_data(selectors.order_with_transactions(order.id))
    with transaction.atomic():
        bodies.refresh(order.id)  # the rows above were written directly, not through the lifecycle
    with django_assert_num_queries(1):
        assert api_client.get(f"/orders/{order.id}").json()["data"] == json.loads(json.dumps(data))

    millis = int(at.timestamp() * 1000)
    assert [(tx["txHash"][2], tx["amount"], tx["from"]) for tx in data["depositTxs"]] == [
        ("b", "5", None),
        ("a", str(big), "0x" + "1" * 40),
    ]
    assert data["relayTxs"] == [
        {
            "orderId": str(order.id),
            "chain": 42161,
            "txHash": "0x" + "d" * 64,
            "status": "success",
            "createdAt": millis,
        },
    ]
    assert data["refundTxs"] == [
        {
            "orderId": str(order.id),
            "chain": 8453,
            "txHash": "0x" + "e" * 64,
            "amount": str(big),
            "status": "failure",
            "createdAt": millis,
        },
    ]


def test_without_an_onramp_adapter_orders_naming_one_are_refused(api_client, tokens, monkeypatch):
    monkeypatch.setattr(onramps, "_adapter", onramps.NoOnramp())

    refused = _post(api_client, order_body(onramp=ONRAMP))
    accepted = _post(api_client, order_body())

    assert (refused.status_code, refused.json()["message"]) == (
        503,
        "onramp: no fiat onramp is configured on this service.",
    )
    assert accepted.status_code == 200
    assert Order.objects.count() == 1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"metadata.srcToken.symbol": "DOGE"},
            "metadata.srcToken: symbol is 'USDC' for this token, not 'DOGE'.",
        ),
        ({"metadata.srcToken.decimals": 18}, "metadata.srcToken: decimals is 6 for this token, not 18."),
        (
            {"metadata.dstToken.chainId": 8453},
            "metadata.dstToken: chainId is 42161 for this token, not 8453.",
        ),
        (
            {"srcTokenAddress": "0x" + "7" * 40},
            f"srcTokenAddress: {'0x' + '7' * 40} is not a token this service knows on chain 8453.",
        ),
        (
            {"recipientAddress": "0x" + "0" * 40},
            "recipientAddress: Must not be the zero address: nothing sent there can be recovered.",
        ),
    ],
)
def test_orders_are_bound_to_the_token_registry(api_client, tokens, overrides, message):
    body = order_body()
    for key, value in overrides.items():
        target, *path = key.split(".")
        if not path:
            body[target] = value
        else:
            body[target][path[0]][path[1]] = value

    response = _post(api_client, body)

    assert (response.status_code, response.json()["message"]) == (400, message)
    assert not Order.objects.exists()


def test_what_is_stored_and_shown_is_the_registrys_token(api_client, tokens):
    body = order_body()
    body["metadata"]["srcToken"]["name"] = "Totally Real Dollars"
    body["metadata"]["srcToken"]["metadata"] = {"logoURI": "https://evil.example/x.png"}

    data = _post(api_client, body).json()["data"]

    src = data["metadata"]["srcToken"]
    assert (src["name"], src["symbol"], src["decimals"]) == ("USD Coin", "USDC", 6)
    assert "evil.example" not in str(data)
