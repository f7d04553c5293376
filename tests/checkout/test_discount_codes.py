"""Discount codes: the API, validation that never uses a code up, and uses that never pass max_uses."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections
from django.utils import timezone

from audit.models import AuditEvent
from checkout import sessions
from checkout.discounts import discount_redeem
from checkout.inputs import SessionRequest
from checkout.models import CheckoutSession, DiscountCode, PaymentLink
from core.errors import InvalidRequest
from tests.conftest import client_for
from tests.factories import make_api_key
from tests.orders.conftest import RECIPIENT, USDC_BASE

pytestmark = pytest.mark.django_db

CODE = {"code": "spring10", "type": "percentage", "value": 10}


def test_create_stores_the_code_upper_case_and_audits_it(admin_client):
    response = admin_client.post("/api/v1/discount-codes", {**CODE, "max_uses": 3}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["object"], body["code"], body["value"], body["current_uses"]) == (
        "discount_code",
        "SPRING10",
        "10",
        0,
    )
    assert body["id"].startswith("dc_") and body["is_active"] is True
    assert AuditEvent.objects.filter(event_type="discount_code.created", resource_id=body["id"]).exists()
    again = admin_client.post("/api/v1/discount-codes", {**CODE, "code": "Spring10"}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "duplicate_resource"
    assert DiscountCode.objects.count() == 1


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"value": 101}, "value"),
        ({"value": 0}, "value"),
        ({"type": "bogo"}, "type"),
        ({"code": "no spaces"}, "code"),
        ({"payment_link_id": "pl_unknown"}, "payment_link_id"),
        ({"expires_at": 1000}, "expires_at"),
        ({"max_uses": 0}, "max_uses"),
    ],
)
def test_a_bad_code_is_refused_with_its_param(admin_client, fields, param):
    response = admin_client.post("/api/v1/discount-codes", {**CODE, **fields}, format="json")
    assert response.status_code == 400 and response.json()["error"]["param"] == param
    assert not DiscountCode.objects.exists() and not AuditEvent.objects.exists()


def test_writes_need_admin_and_validate_needs_read(organization):
    writer = client_for(make_api_key(organization, permissions=["write"])[1])
    assert writer.post("/api/v1/discount-codes", CODE, format="json").status_code == 403
    reader = client_for(make_api_key(organization, permissions=["read"])[1])
    response = reader.post("/api/v1/discount-codes/validate", {"code": "X", "amount": "100"}, format="json")
    assert response.status_code == 200 and response.json() == {
        "object": "discount_validation",
        "valid": False,
        "reason": "Invalid discount code",
    }


def test_validate_gives_every_reason_and_never_uses_a_code(admin_client, organization, tokens):
    link = PaymentLink.objects.create(
        organization=organization,
        name="L",
        token_address=USDC_BASE,
        chain_id=8453,
        recipient_address=RECIPIENT,
    )
    made = lambda **f: DiscountCode.objects.create(organization=organization, type="fixed", value=500, **f)  # noqa: E731
    made(code="OFF")
    made(code="OLD", expires_at=timezone.now() - timedelta(seconds=1))
    made(code="PAUSED", is_active=False)
    made(code="GONE", max_uses=1, current_uses=1)
    made(code="LINKED", payment_link=link)
    made(code="BIG", min_order_amount=10_000)

    def validate(code, amount="1000", link_id=None):
        body = {"code": code, "amount": amount, **({"payment_link_id": link_id} if link_id else {})}
        return admin_client.post("/api/v1/discount-codes/validate", body, format="json").json()

    ok = validate("off")
    assert (ok["valid"], ok["discount_amount"], ok["final_amount"], ok["discount_code"]["code"]) == (
        True,
        "500",
        "500",
        "OFF",
    )
    assert validate("OLD")["reason"] == "Discount code has expired"
    assert validate("PAUSED")["reason"] == "Discount code is not active"
    assert validate("GONE")["reason"] == "Code has reached maximum number of uses"
    assert validate("LINKED")["reason"] == "Code is not valid for this payment link"
    assert validate("LINKED", link_id=link.id)["valid"] is True
    assert validate("BIG")["reason"] == "Order amount is below minimum required"
    assert validate("NOPE")["reason"] == "Invalid discount code"
    assert DiscountCode.objects.get(code="OFF").current_uses == 0


def test_list_update_delete_and_batch(admin_client):
    created = admin_client.post("/api/v1/discount-codes", CODE, format="json").json()
    updated = admin_client.patch(
        f"/api/v1/discount-codes/{created['id']}", {"is_active": False}, format="json"
    )
    assert updated.json()["is_active"] is False
    assert admin_client.patch(f"/api/v1/discount-codes/{created['id']}", {}, format="json").status_code == 400
    assert [c["code"] for c in admin_client.get("/api/v1/discount-codes?active=false").json()["data"]] == [
        "SPRING10"
    ]
    batch = admin_client.post(
        "/api/v1/discount-codes/batch",
        {"codes": ["a1", "A1", "b 2", "c3"], "type": "fixed", "value": "250"},
        format="json",
    ).json()
    assert batch["object"] == "batch_result"
    assert [c["code"] for c in batch["created"]] == ["A1", "C3"]
    assert [e["code"] for e in batch["errors"]] == ["A1", "b 2"]
    assert [c["code"] for c in admin_client.get("/api/v1/discount-codes?search=c").json()["data"]] == ["C3"]
    assert admin_client.delete(f"/api/v1/discount-codes/{created['id']}").json()["deleted"] is True
    assert admin_client.get(f"/api/v1/discount-codes/{created['id']}").status_code == 404
    assert AuditEvent.objects.filter(event_type="discount_code.deleted").count() == 1


@pytest.mark.django_db(transaction=True)
def test_twenty_payers_at_once_never_use_a_code_past_max_uses(organization, tokens):
    """Twenty checkouts apply a code with five uses at the same moment, then all complete."""
    code = DiscountCode.objects.create(
        organization=organization, code="FIVE", type="fixed", value=100, max_uses=5
    )
    barrier = threading.Barrier(20)
    applied: list[str] = []
    refused: list[str] = []

    def payer():
        try:
            barrier.wait()
            session = sessions.platform_session_create(
                organization=organization,
                ask=SessionRequest(
                    token_address=USDC_BASE,
                    chain_id=8453,
                    recipient_address=RECIPIENT,
                    amount=10_000,
                    discount_code="five",
                ),
            )
            applied.append(session.id)
        except InvalidRequest as exc:  # anything else (a deadlock, a bug) fails the thread, and the count
            refused.append(f"{exc.field}: {exc}")
        finally:
            close_old_connections()

    threads = [threading.Thread(target=payer) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(applied) == 5 and len(refused) == 15
    assert set(refused) == {"discount_code: Code has reached maximum number of uses"}

    completions = [
        threading.Thread(target=lambda: (discount_redeem(code.id), close_old_connections()))
        for _ in range(20)
    ]
    for thread in completions:
        thread.start()
    for thread in completions:
        thread.join()
    code.refresh_from_db()
    assert (code.current_uses, code.reserved_uses) == (5, 0)
    assert CheckoutSession.objects.filter(discount_code=code).count() == 5
