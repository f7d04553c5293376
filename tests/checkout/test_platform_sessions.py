"""Checkout sessions of the platform (`cs_`): create, read, list, expire, and the transitions of the spec."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from checkout import payments, sessions
from checkout.models import CheckoutSession, DiscountCode, Transaction
from checkout.tasks import expire_sessions as expire_checkout_sessions
from orders.models import Order, RefundTx
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key
from tests.orders.conftest import RECIPIENT, USDC_BASE
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

AMOUNT = {"token_address": USDC_BASE, "chain_id": 8453, "recipient_address": RECIPIENT, "amount": "2500000"}


def create(client, **fields):
    return client.post("/api/v1/checkout-sessions", {**AMOUNT, **fields}, format="json")


def test_a_session_for_an_amount_carries_what_was_sent(admin_client, tokens, settings):
    response = create(
        admin_client,
        client_reference_id="cart-1",
        metadata={"sku": "A"},
        customer_email="a@example.com",
        customer_name="Ada",
        success_url="https://shop.example/ok?cs={SESSION_ID}",
        expires_in=600,
        utm_source="mail",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["object"] == "checkout_session" and body["id"].startswith("cs_")
    assert body["url"] == f"{settings.PUBLIC_BASE_URL}/pay/s/{body['id']}"
    assert (body["status"], body["amount"], body["payment_link_id"]) == ("open", "2500000", None)
    assert (body["client_reference_id"], body["metadata"], body["customer_email"]) == (
        "cart-1",
        {"sku": "A"},
        "a@example.com",
    )
    assert 590_000 <= body["expires_at"] - body["created_at"] <= 600_000
    stored = CheckoutSession.objects.get()
    raw = CheckoutSession.objects.filter(pk=stored.pk).values_list("customer_email", flat=True)
    assert "a@example.com" not in str(
        list(raw.query.get_compiler("default").execute_sql())
    )  # encrypted at rest


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"amount": None}, "amount"),
        ({"token_address": None}, "token_address"),
        ({"expires_in": 60}, "expires_in"),
        ({"expires_in": 86401}, "expires_in"),
        ({"client_reference_id": "x" * 201}, "client_reference_id"),
        ({"metadata": {"k" * 41: "v"}}, "metadata"),
        ({"metadata": "text"}, "metadata"),
        ({"success_url": "javascript:alert(1)"}, "success_url"),
        ({"customer_email": "not-an-email"}, "customer_email"),
        ({"payment_link_id": "pl_nope"}, "payment_link_id"),
        ({"discount_code": "NOPE"}, "discount_code"),
    ],
)
def test_a_bad_session_is_refused_with_its_param(admin_client, tokens, fields, param):
    body = {key: value for key, value in {**AMOUNT, **fields}.items() if value is not None}
    response = admin_client.post("/api/v1/checkout-sessions", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == param
    assert not CheckoutSession.objects.exists()


def test_expire_moves_only_an_open_session(admin_client, tokens):
    session = create(admin_client).json()
    expired = admin_client.post(f"/api/v1/checkout-sessions/{session['id']}/expire")
    assert expired.status_code == 200 and expired.json()["status"] == "expired"
    again = admin_client.post(f"/api/v1/checkout-sessions/{session['id']}/expire")
    assert again.status_code == 400 and again.json()["error"]["code"] == "invalid_status_transition"
    event = WebhookEvent.objects.get(event_type="checkout.expired").data
    assert event["id"] == session["id"] and event["checkoutSession"]["id"] == session["id"]


def test_another_organizations_session_is_not_found(admin_client, tokens):
    session = create(admin_client).json()
    other = client_for(make_api_key(OrganizationFactory(slug="globex"), permissions=["admin"])[1])
    assert other.get(f"/api/v1/checkout-sessions/{session['id']}").status_code == 404
    assert other.post(f"/api/v1/checkout-sessions/{session['id']}/expire").status_code == 404
    assert CheckoutSession.objects.get().status == "open"


def test_list_filters_by_status_link_and_time(admin_client, tokens):
    first, second = create(admin_client).json(), create(admin_client).json()
    admin_client.post(f"/api/v1/checkout-sessions/{first['id']}/expire")
    assert [s["id"] for s in admin_client.get("/api/v1/checkout-sessions?status=open").json()["data"]] == [
        second["id"]
    ]
    since = admin_client.get(f"/api/v1/checkout-sessions?from={second['created_at']}").json()["data"]
    assert second["id"] in [s["id"] for s in since]
    assert admin_client.get("/api/v1/checkout-sessions?from=soon").json()["error"]["param"] == "from"


def test_time_out_expires_the_session_and_its_waiting_order(admin_client, tokens, client):
    session = CheckoutSession.objects.get(pk=create(admin_client).json()["id"])
    order = payments.session_order_create(
        session=session, src_chain=8453, src_token=USDC_BASE, payer_ip="1.2.3.4"
    )
    CheckoutSession.objects.filter(pk=session.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert expire_checkout_sessions() == 1
    session.refresh_from_db()
    order.refresh_from_db()
    assert (session.status, order.status) == ("expired", "expired")
    assert WebhookEvent.objects.get(event_type="checkout.expired").data["reason"] == "timeout"
    page = client.get(f"/pay/s/{session.id}").content.decode()
    assert "This checkout has expired." in page and order.global_address not in page


def test_choosing_another_token_replaces_an_unpaid_order(admin_client, tokens):
    session = CheckoutSession.objects.get(pk=create(admin_client).json()["id"])
    first = payments.session_order_create(
        session=session, src_chain=8453, src_token=USDC_BASE, payer_ip="1.2.3.4"
    )
    eth = "0x0000000000000000000000000000000000000000"
    second = payments.session_order_create(session=session, src_chain=8453, src_token=eth, payer_ip="1.2.3.4")
    first.refresh_from_db()
    assert first.status == "expired" and second.status == "scanning_deposit_transaction"
    assert payments.session_current_order(session) == second


def _paid_session(admin_client):
    """A session whose order got its whole price from 0x44…44."""
    from orders import lifecycle

    session = CheckoutSession.objects.get(pk=create(admin_client).json()["id"])
    order = payments.session_order_create(
        session=session, src_chain=8453, src_token=USDC_BASE, payer_ip="1.2.3.4"
    )
    lifecycle.order_record_deposit(
        order=order,
        chain=8453,
        tx_hash="0x" + "a" * 64,
        amount=int(order.src_amount),
        from_address="0x" + "4" * 40,
    )
    return session, order


def _refunded(order, *, deposit):
    """The order failed and its refund was mined (as the refund's outbox transaction records it); `deposit`
    None for a refund with no deposit behind it (a card refund, one staff made by hand)."""
    from orders import lifecycle

    lifecycle.order_fail(order=Order.objects.get(pk=order.pk), error="SLIPPAGE: test")
    RefundTx.objects.create(
        order=order,
        deposit=deposit,
        chain=8453,
        tx_hash="0x" + "b" * 64,
        amount=order.src_amount,
        status="success",
    )
    lifecycle.order_refunded(order=Order.objects.get(pk=order.pk), refund_tx_hash="0x" + "b" * 64)


def test_a_failed_payment_fails_the_processing_session_and_its_transaction(admin_client, tokens, client):
    session, order = _paid_session(admin_client)
    session.refresh_from_db()
    assert session.status == "processing"
    assert Transaction.objects.get(order_id=order.pk).status == "confirming"
    _refunded(order, deposit=order.deposit_txs.get())
    session.refresh_from_db()
    assert session.status == "failed"
    assert Transaction.objects.get(order_id=order.pk).status == "failed"
    failed = WebhookEvent.objects.get(event_type="payment.failed").data
    assert (failed["error"], failed["refund_tx_hash"]) == ("SLIPPAGE: test", "0x" + "b" * 64)
    assert failed["checkoutSession"]["id"] == session.id and failed["id"].startswith("txn_")
    expire = admin_client.post(f"/api/v1/checkout-sessions/{session.id}/expire")
    assert expire.status_code == 400 and expire.json()["error"]["code"] == "invalid_status_transition"
    page = client.get(f"/pay/s/{session.id}").content.decode()
    assert 'data-value="0x' + "b" * 64 + '"' in page, page
    assert 'id="receipt-refunded"' in page
    assert "This payment did not go through: what you paid was sent back to you." in page
    assert 'id="refund-to-1" data-value="0x' + "4" * 40 + '"' in page  # where it went: the sender's address


def test_a_refund_whose_address_is_not_known_shows_no_empty_address(admin_client, tokens, client):
    session, order = _paid_session(admin_client)
    _refunded(order, deposit=None)  # no deposit behind it: no address to show
    page = client.get(f"/pay/s/{session.id}").content.decode()
    assert 'data-value="0x' + "b" * 64 + '"' in page and "Refunded to" not in page


@pytest.mark.parametrize(
    ("locale", "subject", "sentence"),
    [
        ("", "Your payment to Acme was refunded", "Refund transaction: 0x"),
        ("es", "Tu pago a Acme fue reembolsado", "Transacción de reembolso: 0x"),
    ],
)
def test_a_refunded_payer_who_gave_an_email_is_told_where_the_money_went(
    admin_client, tokens, mailoutbox, locale, subject, sentence
):
    from orders import lifecycle
    from webhooks import notifications
    from webhooks.models import NotificationEmail

    session = CheckoutSession.objects.get(pk=create(admin_client).json()["id"])
    CheckoutSession.objects.filter(pk=session.pk).update(customer_email="payer@example.com", locale=locale)
    order = payments.session_order_create(
        session=session, src_chain=8453, src_token=USDC_BASE, payer_ip="1.2.3.4"
    )
    lifecycle.order_record_deposit(
        order=order,
        chain=8453,
        tx_hash="0x" + "a" * 64,
        amount=int(order.src_amount),
        from_address="0x" + "4" * 40,
    )
    lifecycle.order_fail(order=Order.objects.get(pk=order.pk), error="SLIPPAGE: test")
    assert not NotificationEmail.objects.exists()  # nothing is back yet: nothing to tell
    RefundTx.objects.create(
        order=order, chain=8453, tx_hash="0x" + "b" * 64, amount=order.src_amount, status="success"
    )
    lifecycle.order_refunded(order=Order.objects.get(pk=order.pk), refund_tx_hash="0x" + "b" * 64)
    email = NotificationEmail.objects.get()
    assert (email.event_type, email.to_address) == ("receipt.refunded", "payer@example.com")
    assert email.subject == subject and sentence in email.body
    assert "0x" + "b" * 64 in email.body and "https://basescan.org/tx/0x" + "b" * 64 in email.body
    assert f"/pay/s/{session.id}" in email.body
    assert notifications.send(email.id) == "sent"
    assert mailoutbox[0].to == ["payer@example.com"] and mailoutbox[0].subject == email.subject


def test_a_discount_code_lowers_the_amount_and_holds_one_use(admin_client, organization, tokens):
    code = DiscountCode.objects.create(
        organization=organization, code="TEN", type="percentage", value=10, max_uses=1
    )
    first = create(admin_client, discount_code="ten")
    assert first.status_code == 201, first.content
    assert (first.json()["amount"], first.json()["discount_amount"], first.json()["discount_code"]) == (
        "2250000",
        "250000",
        "TEN",
    )
    code.refresh_from_db()
    assert (code.reserved_uses, code.current_uses) == (1, 0)
    refused = create(admin_client, discount_code="TEN")
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "'discount_code': Code has reached maximum number of uses"
    admin_client.post(f"/api/v1/checkout-sessions/{first.json()['id']}/expire")
    code.refresh_from_db()
    assert code.reserved_uses == 0
    assert create(admin_client, discount_code="TEN").status_code == 201


def test_the_payers_choices_price_the_session_once_however_often_they_change(
    admin_client, organization, tokens
):
    link = admin_client.post(
        "/api/v1/payment-links",
        {
            **{k: AMOUNT[k] for k in ("token_address", "chain_id", "recipient_address")},
            "name": "Mug",
            "amount": "1000",
            "shipping_options": [
                {"id": "std", "name": "Standard", "amount": "100"},
                {"id": "fast", "name": "Express", "amount": "300"},
            ],
        },
        format="json",
    ).json()
    DiscountCode.objects.create(organization=organization, code="HALF", type="percentage", value=50)
    created = admin_client.post("/api/v1/checkout-sessions", {"payment_link_id": link["id"]}, format="json")
    session = CheckoutSession.objects.get(pk=created.json()["id"])
    options = {option["id"]: option for option in link["shipping_options"]}

    def choose(option, code=""):
        return sessions.session_prepare(
            session=session,
            amount=None,
            discount_code=code,
            form_data={},
            shipping_option=options[option],
            shipping_address=None,
        )

    assert int(choose("std").amount) == 1100
    assert int(choose("fast").amount) == 1300
    priced = choose("std", code="half")
    assert (int(priced.amount), int(priced.discount_amount)) == (550, 550)
    again = choose("fast")  # the page no longer asks for the code: it stays, with its one held use
    assert (int(again.amount), int(again.discount_amount), again.discount_code.code) == (650, 650, "HALF")
    assert DiscountCode.objects.get(code="HALF").reserved_uses == 1
    DiscountCode.objects.create(organization=organization, code="TENOFF", type="fixed", value=10)
    other = choose("std", code="tenoff")  # another code replaces it, and its hold is released
    assert (int(other.amount), other.discount_code.code) == (1090, "TENOFF")
    assert DiscountCode.objects.get(code="HALF").reserved_uses == 0


def test_a_discount_the_merchant_applied_survives_the_payers_submit(admin_client, organization, tokens):
    """Found black-box: the API session showed 3.6 dUSDC with the code applied and the code field hidden; after
    the payer's submit the session and its order asked for the full 4 and the code's use was never counted."""
    from django.test import Client

    link = admin_client.post(
        "/api/v1/payment-links",
        {
            **{k: AMOUNT[k] for k in ("token_address", "chain_id", "recipient_address")},
            "name": "Poster",
            "amount": "4000000",
        },
        format="json",
    ).json()
    code = DiscountCode.objects.create(
        organization=organization, code="SPRING10", type="percentage", value=10
    )
    created = admin_client.post(
        "/api/v1/checkout-sessions",
        {"payment_link_id": link["id"], "discount_code": "SPRING10"},
        format="json",
    ).json()
    assert (created["amount"], created["discount_code"]) == ("3600000", "SPRING10")
    payer = Client()
    page = payer.get(f"/pay/s/{created['id']}").content.decode()
    assert "Discount SPRING10 applied." in page and 'name="discount_code"' not in page

    submitted = payer.post(f"/pay/s/{created['id']}", {"pay_with": f"8453:{USDC_BASE}"})

    assert submitted.status_code == 302, submitted.content.decode()
    session = CheckoutSession.objects.get(pk=created["id"])
    assert (int(session.amount), int(session.discount_amount), session.discount_code_id) == (
        3_600_000,
        400_000,
        code.pk,
    )
    order = Order.objects.get(session_order__session=session)
    fee = int(order.fee["finalFeeBps"])
    assert int(order.payload["expectedDstAmount"]) == 3_600_000 - 3_600_000 * fee // 10_000
    code.refresh_from_db()
    assert (code.reserved_uses, code.current_uses) == (1, 0)
    api = admin_client.get(f"/api/v1/checkout-sessions/{session.id}").json()
    assert (api["amount"], api["discount_code"], api["discount_amount"]) == ("3600000", "SPRING10", "400000")


def test_a_payers_url_cannot_choose_where_the_merchants_payers_are_sent(admin_client, organization, tokens):
    """Found black-box: `/pay/{code}?success_url=https://evil.example/claim-refund&cancel_url=...` sent the payer
    there after paying, and the cancel link too. Only the merchant's hosts are honoured from the URL."""
    from django.test import Client

    link = admin_client.post(
        "/api/v1/payment-links",
        {
            **{k: AMOUNT[k] for k in ("token_address", "chain_id", "recipient_address")},
            "name": "Poster",
            "amount": "4000000",
            "return_url": "https://pay-return.example/done",
        },
        format="json",
    ).json()
    updated = admin_client.patch(
        "/api/v1/organization",
        {"redirect_domains": ["Shop.Example", "shop.example"], "website_url": "https://www.brand.example"},
        format="json",
    )
    assert updated.status_code == 200 and updated.json()["redirect_domains"] == ["shop.example"]
    payer = Client()

    def start(query: str) -> CheckoutSession:
        page = payer.get(f"/pay/{link['short_code']}?{query}").content.decode()
        response = payer.post(f"/pay/{link['short_code']}?{query}", {"pay_with": f"8453:{USDC_BASE}"})
        assert response.status_code == 302, response.content.decode()
        session = CheckoutSession.objects.get(pk=response["Location"].rsplit("/", 1)[1])
        session.page = page
        return session

    evil = start("success_url=https://evil.example/claim-refund&cancel_url=https://evil.example/cancel")
    assert (evil.success_url, evil.cancel_url) == ("", "")
    assert "evil.example" not in evil.page
    lookalike = start("success_url=https://shop.example.evil.example/x&cancel_url=https://evilshop.example/")
    assert (lookalike.success_url, lookalike.cancel_url) == ("", "")
    merchant = start(
        "success_url=https://checkout.shop.example/ok?s={SESSION_ID}&cancel_url=https://www.brand.example/c"
    )
    assert merchant.success_url == "https://checkout.shop.example/ok?s={SESSION_ID}"
    assert (
        merchant.cancel_url == "https://www.brand.example/c"
        and 'href="https://www.brand.example/c"' in merchant.page
    )
    own = start("success_url=https://pay-return.example/thanks")
    assert own.success_url == "https://pay-return.example/thanks"


@pytest.mark.parametrize(
    "domains", [["https://shop.example"], ["shop example"], ["x" * 254], ["a.b"] * 21, "shop"]
)
def test_redirect_domains_must_be_host_names(admin_client, organization, domains):
    response = admin_client.patch("/api/v1/organization", {"redirect_domains": domains}, format="json")
    assert response.status_code == 400 and response.json()["error"]["param"].startswith("redirect_domains")
    organization.refresh_from_db()
    assert organization.redirect_domains == []


def test_the_platform_shows_only_its_own_sessions_not_the_order_interfaces(
    admin_client, tokens, organization
):
    """One table holds both interfaces' sessions: the platform's list, detail, search and the hosted page see only
    the `cs_` ones, even when an order interface session belongs to the same organization."""
    _, raw = make_api_key(organization, permissions=["write"])
    interface_id = admin_client.post(
        "/checkout-sessions",
        {"client_reference_id": "cart-1"},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    ).json()["data"]["id"]
    assert CheckoutSession.objects.get(pk=interface_id).organization == organization
    platform_id = create(admin_client, client_reference_id="cart-1").json()["id"]

    listed = admin_client.get("/api/v1/checkout-sessions").json()["data"]
    assert [session["id"] for session in listed] == [platform_id]
    assert admin_client.get(f"/api/v1/checkout-sessions/{interface_id}").status_code == 404
    assert admin_client.post(f"/api/v1/checkout-sessions/{interface_id}/expire").status_code == 404
    assert admin_client.get(f"/pay/s/{interface_id}").status_code == 404
    assert CheckoutSession.objects.get(pk=interface_id).status == "open"
    # And the order interface sees only its own.
    assert admin_client.get(f"/checkout-sessions/{platform_id}").status_code == 400  # not a UUID
