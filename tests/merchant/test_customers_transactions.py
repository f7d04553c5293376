"""Customers (encrypted at rest, erasure, export) and transactions (filters, stats, streamed export)."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from checkout.models import Transaction
from merchant.models import Customer
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key

pytestmark = pytest.mark.django_db
WALLET = "0xAbCdEf0000000000000000000000000000000001"


def _transaction(organization, **fields):
    values = {
        "organization": organization,
        "order_id": fields.pop("order_id", None) or __import__("uuid").uuid4(),
        "chain_id": 8453,
        "to_address": "0x" + "1" * 40,
        "token_address": "0x" + "2" * 40,
        "amount": 5,
        "source_chain_id": 8453,
        "source_token_address": "0x" + "2" * 40,
        "source_amount": 6,
    }
    return Transaction.objects.create(**values | fields)


def test_customers_are_created_found_by_wallet_name_or_email_and_encrypted(admin_client):
    response = admin_client.post(
        "/api/v1/customers",
        {
            "wallet_address": WALLET,
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "metadata": {"tier": "gold"},
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["object"], body["wallet_address"], body["name"]) == (
        "customer",
        WALLET.lower(),
        "Ada Lovelace",
    )
    assert (body["total_paid"], body["transaction_count"]) == ("0.00", 0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, email FROM platform_api_customer")
        stored = cursor.fetchone()
    assert "Ada" not in str(stored) and "ada@example.com" not in str(stored)
    for search in ("abcdef", "ADA@example.com", "ada lovelace"):
        found = admin_client.get(f"/api/v1/customers?search={search}").json()["data"]
        assert [c["id"] for c in found] == [body["id"]], search
    assert admin_client.get("/api/v1/customers?search=Ada").json()["data"] == []  # not a whole name or email
    duplicate = admin_client.post("/api/v1/customers", {"wallet_address": WALLET.lower()}, format="json")
    assert duplicate.status_code == 409 and duplicate.json()["error"]["param"] == "wallet_address"
    assert Customer.objects.count() == 1


def test_update_keeps_the_wallet_and_delete_erases_personal_data(admin_client, organization):
    customer = admin_client.post(
        "/api/v1/customers", {"wallet_address": WALLET, "email": "a@b.co"}, format="json"
    ).json()
    path = f"/api/v1/customers/{customer['id']}"
    moved = admin_client.patch(path, {"wallet_address": "0x" + "9" * 40}, format="json")
    assert moved.status_code == 400 and moved.json()["error"]["param"] == "wallet_address"
    assert admin_client.patch(path, {"name": "Grace"}, format="json").json()["name"] == "Grace"
    txn = _transaction(organization, customer_id=customer["id"])
    assert admin_client.delete(path).json() == {"object": "customer", "id": customer["id"], "deleted": True}
    erased = admin_client.get(path).json()
    assert (erased["name"], erased["email"], erased["wallet_address"]) == (None, None, WALLET.lower())
    assert admin_client.get("/api/v1/customers?search=a@b.co").json()["data"] == []
    assert [t["id"] for t in admin_client.get(f"{path}/transactions").json()["data"]] == [txn.id]


def test_another_organizations_customer_is_not_found(admin_client):
    customer = admin_client.post("/api/v1/customers", {"wallet_address": WALLET}, format="json").json()
    other = client_for(make_api_key(OrganizationFactory(slug="globex"), permissions=["admin"])[1])
    for method in ("get", "patch", "delete"):
        assert (
            getattr(other, method)(
                f"/api/v1/customers/{customer['id']}", {"name": "x"}, format="json"
            ).status_code
            == 404
        )
    assert json.loads(b"".join(other.get("/api/v1/customers/export?format=json").streaming_content)) == []


def test_customer_export_streams_csv_and_json(admin_client):
    for index in range(3):
        admin_client.post(
            "/api/v1/customers", {"wallet_address": f"0x{index:040x}", "name": f"N{index}"}, format="json"
        )
    response = admin_client.get("/api/v1/customers/export?format=csv")
    assert response.streaming and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["name"] for row in rows] == ["N2", "N1", "N0"]
    data = json.loads(b"".join(admin_client.get("/api/v1/customers/export?format=json").streaming_content))
    assert len(data) == 3 and data[0]["object"] == "customer"
    assert admin_client.get("/api/v1/customers/export?format=xml").json()["error"]["param"] == "format"


def test_transactions_filter_stats_and_export(admin_client, organization):
    done = _transaction(
        organization, status="completed", amount_usd=Decimal("12.50"), completed_at=timezone.now()
    )
    _transaction(organization, status="failed", chain_id=10)
    _transaction(organization, status="pending")
    _transaction(OrganizationFactory(slug="other"), status="completed", amount_usd=Decimal("99"))

    listed = admin_client.get("/api/v1/transactions?status=completed").json()
    assert [t["id"] for t in listed["data"]] == [done.id] and listed["data"][0]["object"] == "transaction"
    assert len(admin_client.get("/api/v1/transactions?chain_id=10").json()["data"]) == 1
    for query, param in (("status=lost", "status"), ("chain_id=x", "chain_id"), ("from=yesterday", "from")):
        response = admin_client.get(f"/api/v1/transactions?{query}")
        assert response.status_code == 400 and response.json()["error"]["param"] == param
    stats = admin_client.get("/api/v1/transactions/stats").json()
    assert stats == {
        "object": "transaction_stats",
        "total_transactions": 3,
        "completed_transactions": 1,
        "failed_transactions": 1,
        "pending_transactions": 1,
        "total_volume_usd": "12.50",
        "last_24h": {"transactions": 3, "completed": 1, "volume_usd": "12.50"},
        "status_breakdown": {"pending": 1, "confirming": 0, "completed": 1, "failed": 1},
    }
    exported = admin_client.get("/api/v1/transactions/export?format=csv&status=failed")
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert [row["status"] for row in rows] == ["failed"] and rows[0]["chain_id"] == "10"
    assert admin_client.get(f"/api/v1/transactions/{done.id}").json()["amount_usd"] == "12.50"
    other = Transaction.objects.exclude(organization=organization).get()
    assert admin_client.get(f"/api/v1/transactions/{other.id}").status_code == 404


@pytest.mark.parametrize(
    ("path", "first_columns"),
    [
        ("/api/v1/customers/export", ["object", "id", "wallet_address"]),
        ("/api/v1/transactions/export", ["object", "id"]),
        ("/api/v1/balance-transactions/export", ["object", "id"]),
    ],
)
def test_an_export_with_no_rows_still_has_its_header(admin_client, path, first_columns):
    """Found by probing: an empty CSV export was an empty file, which spreadsheet imports refuse."""
    response = admin_client.get(f"{path}?format=csv")
    text = b"".join(response.streaming_content).decode()
    header = next(csv.reader(io.StringIO(text)))
    assert text.count("\n") == 1 and header[: len(first_columns)] == first_columns
    assert json.loads(b"".join(admin_client.get(f"{path}?format=json").streaming_content)) == []
