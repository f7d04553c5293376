"""`/api/v1/balance-transactions`: the organization's rows only, signed amounts beside formatted ones,
filters that refuse what they cannot read, one row by id, and the streamed export."""

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from ledger.balance import Type, balance_record
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key
from tests.orders.conftest import USDC_BASE

pytestmark = pytest.mark.django_db

DEPOSIT, DELIVERY = "0x" + "01" * 32, "0x" + "02" * 32


def payment(org, n=1, **overrides):
    fields = {
        "key": f"payment:txn_{org.pk}_{n}",
        "organization_id": org.pk,
        "type": Type.PAYMENT,
        "chain_id": 8453,
        "token_address": USDC_BASE,
        "gross": 4_000_000,
        "fee": 48_000,
        "source_id": f"txn_{n}",
        "transaction_id": f"txn_{n}",
        "tx_hashes": [("deposit", 8453, DEPOSIT), ("delivery", 8453, DELIVERY)],
    }
    return balance_record(**(fields | overrides))


def refund(org, n=1):
    return balance_record(
        key=f"refund:{org.pk}:{n}",
        organization_id=org.pk,
        type=Type.REFUND,
        sign=-1,
        chain_id=8453,
        token_address=USDC_BASE,
        gross=1_500_000,
        net=0,
        source_id=f"txn_{n}",
    )


def test_rows_are_the_organizations_own_with_gross_fee_and_net(admin_client, organization, tokens):
    mine = payment(organization)
    refund(organization)
    payment(OrganizationFactory(), 9)

    body = admin_client.get("/api/v1/balance-transactions").json()

    assert len(body["data"]) == 2
    rows = {row["type"]: row for row in body["data"]}
    assert set(rows) == {"payment", "refund"}
    paid = rows["payment"]
    assert (paid["id"], paid["object"]) == (mine.id, "balance_transaction")
    assert (paid["amount"], paid["fee"], paid["net"]) == ("4000000", "48000", "3952000")
    assert (paid["amount_formatted"], paid["fee_formatted"], paid["net_formatted"]) == (
        "4 USDC",
        "0.048 USDC",
        "3.952 USDC",
    )
    assert paid["tx_hashes"] == [
        {"role": "deposit", "chain_id": 8453, "tx_hash": DEPOSIT},
        {"role": "delivery", "chain_id": 8453, "tx_hash": DELIVERY},
    ]
    assert (rows["refund"]["amount"], rows["refund"]["net"], rows["refund"]["amount_formatted"]) == (
        "-1500000",
        "0",
        "-1.5 USDC",
    )


def test_a_row_is_recorded_once_per_key(organization):
    first = payment(organization)
    again = payment(organization, gross=1)
    assert again.pk == first.pk and again.gross == 4_000_000


def test_filters_narrow_the_list(admin_client, organization):
    payment(organization, 1)
    payment(organization, 2, chain_id=31337, token_address="0x" + "e7" * 20)
    refund(organization, 3)
    now = datetime.now(UTC)
    ms = lambda moment: str(int(moment.timestamp() * 1000))  # noqa: E731

    def ids(query):
        response = admin_client.get(f"/api/v1/balance-transactions?{query}")
        assert response.status_code == 200, response.content
        return sorted(row["source_id"] for row in response.json()["data"])

    assert ids("type=refund") == ["txn_3"]
    assert ids("chain_id=31337") == ["txn_2"]
    assert ids(f"token_address={'0x' + 'E7' * 20}") == ["txn_2"]
    assert ids("source_id=txn_1") == ["txn_1"]
    assert ids(f"created[gte]={ms(now - timedelta(minutes=1))}") == ["txn_1", "txn_2", "txn_3"]
    assert ids(f"created[lte]={ms(now - timedelta(minutes=1))}") == []
    assert ids("type=&chain_id=") == ["txn_1", "txn_2", "txn_3"]  # empty is no filter


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("type=charge", "type"),
        ("chain_id=abc", "chain_id"),
        ("token_address=0x12", "token_address"),
        ("created[gte]=yesterday", "created[gte]"),
        ("created[lte]=-5", "created[lte]"),
        ("format=xml", "format"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(admin_client, organization, query, param):
    path = "export" if query.startswith("format") else ""
    response = admin_client.get(f"/api/v1/balance-transactions/{path}?{query}".replace("/?", "?"))
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == param


def test_one_row_by_id_and_never_another_organizations(admin_client, organization):
    mine, theirs = payment(organization), payment(OrganizationFactory(), 2)

    assert admin_client.get(f"/api/v1/balance-transactions/{mine.id}").json()["id"] == mine.id
    missing = admin_client.get(f"/api/v1/balance-transactions/{theirs.id}")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"


def test_a_read_key_may_list_and_export(organization):
    payment(organization)
    _, raw = make_api_key(organization, permissions=["read"], name="accountant")
    client = client_for(raw)

    assert client.get("/api/v1/balance-transactions").status_code == 200
    exported = client.get("/api/v1/balance-transactions/export?format=csv")
    assert exported.status_code == 200 and exported["Content-Type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert len(lines) == 1
    assert (lines[0]["amount"], lines[0]["fee"], lines[0]["net"]) == ("4000000", "48000", "3952000")
    assert lines[0]["tx_hashes"] == f"deposit:8453:{DEPOSIT} delivery:8453:{DELIVERY}"
    as_json = client.get("/api/v1/balance-transactions/export?format=json&type=refund")
    assert json.loads(b"".join(as_json.streaming_content)) == []


def test_staff_record_an_adjustment_once_per_key_and_a_bad_one_writes_nothing(admin_client, organization):
    from django.core.management import CommandError, call_command

    from ledger.models import BalanceTransaction

    args = ["--org", organization.slug, "--chain", "8453", "--token", USDC_BASE, "--reason", "fee refunded"]
    for _ in range(2):
        call_command("balance_adjust", *args, "--amount", "-48000", "--key", "ticket-7")
    for bad in (["--amount", "0"], ["--amount", "1.5"], ["--amount", "5", "--token", "0x12"]):
        with pytest.raises(CommandError):
            call_command("balance_adjust", *args, *bad)

    assert BalanceTransaction.objects.count() == 1
    row = admin_client.get("/api/v1/balance-transactions?type=adjustment").json()["data"][0]
    assert (row["amount"], row["fee"], row["net"], row["description"]) == (
        "-48000",
        "0",
        "-48000",
        "fee refunded",
    )


def test_the_export_formats_each_rows_own_token(admin_client, organization, tokens):
    payment(organization, 1)
    payment(organization, 2, chain_id=42161, token_address="0xaf88d065e77c8cC2239327C5EDb3A432268e5831")
    payment(organization, 3, token_address="0x" + "12" * 20)  # not in the registry

    exported = admin_client.get("/api/v1/balance-transactions/export?format=json")

    formatted = {
        row["source_id"]: row["net_formatted"] for row in json.loads(b"".join(exported.streaming_content))
    }
    assert formatted == {"txn_1": "3.952 USDC", "txn_2": "3.952 USDC", "txn_3": None}
