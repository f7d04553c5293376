from datetime import timedelta

import pytest
from django.utils import timezone

from chains.evm import is_address
from chains.registry import deposit_address
from platform_api.models import QuickPayment
from platform_api.services import quick_payments_expire
from platform_api.tasks import expire_quick_payments

pytestmark = pytest.mark.django_db

VALID = {
    "amount": "2500000",
    "token_address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    "chain_id": 8453,
    "recipient_address": "0x1111111111111111111111111111111111111111",
}


def _post(client, body, ip="203.0.113.50"):
    return client.post("/api/v1/quick-pay", body, format="json", REMOTE_ADDR=ip)


def test_creates_a_payment_with_its_own_deposit_address(api_client):
    response = _post(api_client, VALID)

    assert response.status_code == 201
    body = response.json()
    payment = QuickPayment.objects.get(pk=body["id"])
    assert body == {
        "object": "quick_payment",
        "id": payment.id,
        "status": "awaiting_payment",
        "amount": "2500000",
        "token_address": VALID["token_address"],
        "chain_id": 8453,
        "recipient_address": VALID["recipient_address"],
        "deposit_address": deposit_address(
            chain_id=8453, kind="quick_payment", identifier=payment.id, field="chain_id"
        ),
        "expires_at": int(payment.expires_at.timestamp() * 1000),
        "created_at": int(payment.created_at.timestamp() * 1000),
    }
    assert body["id"].startswith("qp_")
    assert is_address(body["deposit_address"])
    assert body["expires_at"] - body["created_at"] == 15 * 60 * 1000


def test_each_payment_gets_a_different_deposit_address(api_client):
    first = _post(api_client, VALID).json()["deposit_address"]
    second = _post(api_client, VALID).json()["deposit_address"]
    assert first != second


def test_needs_no_key_and_ignores_a_bad_one(api_client):
    response = api_client.post(
        "/api/v1/quick-pay",
        VALID,
        format="json",
        HTTP_AUTHORIZATION="Bearer svc_live_bogus",
        REMOTE_ADDR="203.0.113.51",
    )
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("change", "code", "param"),
    [
        ({"amount": None}, "missing_required_field", "amount"),
        ({"token_address": None}, "missing_required_field", "token_address"),
        ({"chain_id": None}, "missing_required_field", "chain_id"),
        ({"recipient_address": None}, "missing_required_field", "recipient_address"),
        ({"amount": "0"}, "invalid_field_value", "amount"),
        ({"amount": "1.5"}, "invalid_field_value", "amount"),
        ({"amount": "-1"}, "invalid_field_value", "amount"),
        ({"amount": 1000}, "invalid_field_value", "amount"),
        ({"amount": "1" * 80}, "invalid_field_value", "amount"),
        ({"token_address": "0x833589"}, "invalid_address", "token_address"),
        (
            {"recipient_address": "1111111111111111111111111111111111111111"},
            "invalid_address",
            "recipient_address",
        ),
        ({"recipient_address": "0x" + "g" * 40}, "invalid_address", "recipient_address"),
        ({"chain_id": "8453"}, "invalid_field_value", "chain_id"),
        ({"chain_id": 0}, "invalid_field_value", "chain_id"),
        ({"chain_id": 999999}, "invalid_field_value", "chain_id"),
        ({"chain_id": True}, "invalid_field_value", "chain_id"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_stores_nothing(api_client, change, code, param):
    body = {**VALID, **change}
    body = {k: v for k, v in body.items() if v is not None}

    response = _post(api_client, body, ip="203.0.113.60")

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", code, param)
    assert param in error["message"]
    assert not QuickPayment.objects.exists()


def test_expiry_marks_only_unpaid_payments_past_their_time(api_client):
    late = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    fresh = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    paid = QuickPayment.objects.get(pk=_post(api_client, VALID).json()["id"])
    QuickPayment.objects.filter(pk__in=[late.pk, paid.pk]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    QuickPayment.objects.filter(pk=paid.pk).update(status=QuickPayment.Status.PAID)

    assert expire_quick_payments() == 1
    assert quick_payments_expire() == 0

    statuses = dict(QuickPayment.objects.values_list("pk", "status"))
    assert statuses == {late.pk: "expired", fresh.pk: "awaiting_payment", paid.pk: "paid"}
