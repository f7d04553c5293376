"""GET /analytics/overview: every figure from aggregate queries, by UTC day, per organization."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from checkout.analytics import analytics_overview, revenue_rebuild
from merchant.api import revenue_record
from merchant.models import RevenueDay
from tests.factories import (
    CustomerFactory,
    OrganizationFactory,
    PaymentLinkFactory,
    PlatformCheckoutSessionFactory,
    TransactionFactory,
)
from tests.orders.conftest import USDC_ARB, USDC_BASE

pytestmark = pytest.mark.django_db


def _paid(organization, usd, when, *, link=None, chain_id=8453, token=USDC_BASE, status="completed"):
    """A transaction as the checkout leaves it: completed ones are added to the rollup, as `on_executed` does."""
    row = TransactionFactory(
        organization=organization,
        payment_link=link,
        status=status,
        chain_id=chain_id,
        token_address=token,
        amount=int(Decimal(usd) * 10**6),
        amount_usd=Decimal(usd),
        completed_at=when,
        created_at=when,
    )
    if status == "completed":
        revenue_record(
            organization_id=organization.pk,
            completed_at=when,
            payment_link_id=row.payment_link_id,
            chain_id=chain_id,
            token_address=token,
            amount_usd=Decimal(usd),
        )
    return row


@pytest.fixture
def shop(organization, tokens):
    link = PaymentLinkFactory(organization=organization, name="Poster")
    PaymentLinkFactory(organization=organization, name="Old", is_active=False)
    now = timezone.now()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    _paid(organization, "10.00", midnight - timedelta(minutes=1), link=link)  # yesterday, 23:59 UTC
    _paid(organization, "5.50", midnight + timedelta(minutes=1), link=link)  # today, 00:01 UTC
    _paid(organization, "20.00", now - timedelta(days=10), chain_id=42161, token=USDC_ARB)
    _paid(organization, "100.00", now - timedelta(days=60))
    _paid(organization, "7.00", now - timedelta(hours=1), status="failed")
    _paid(OrganizationFactory(slug="other"), "999.00", now)
    CustomerFactory(organization=organization, first_payment_at=now)
    CustomerFactory(organization=organization, first_payment_at=now - timedelta(days=60))
    for status in ("completed", "completed", "expired", "open"):
        PlatformCheckoutSessionFactory(payment_link=link, status=status)
    return link, midnight


def test_the_overview_of_30_days(admin_client, organization, shop, django_assert_max_num_queries):
    link, midnight = shop
    with django_assert_max_num_queries(9):  # a fixed number of aggregate queries, whatever the rows
        analytics_overview(organization=organization, period="30d")
    body = admin_client.get("/api/v1/analytics/overview").json()
    assert (body["object"], body["period"]) == ("analytics_overview", "30d")
    assert body["revenue"] == {
        "period_usd": "35.50",
        "period_transactions": 3,
        "all_time_usd": "135.50",
        "all_time_transactions": 4,
    }
    assert body["customers"] == {"total": 2, "new_in_period": 1}
    assert body["payment_links"] == {"total": 2, "active": 1}
    assert body["conversion_rate"] == 0.5
    by_day = {row["date"]: row for row in body["daily"]}
    yesterday, today = (midnight - timedelta(days=1)).date().isoformat(), midnight.date().isoformat()
    assert by_day[yesterday]["revenue_usd"] == "10.00" and by_day[today]["revenue_usd"] == "5.50"
    assert sum(row["transactions"] for row in body["daily"]) == 3
    assert body["top_payment_links"] == [
        {"id": link.id, "name": "Poster", "revenue_usd": "15.50", "transactions": 2}
    ]
    assert [(t["symbol"], t["chain_id"], t["revenue_usd"]) for t in body["top_tokens"]] == [
        ("USDC", 42161, "20.00"),
        ("USDC", 8453, "15.50"),
    ]
    assert [(c["name"], c["transactions"]) for c in body["top_chains"]] == [("Arbitrum One", 1), ("Base", 2)]


def test_periods_and_their_errors(admin_client, shop):
    week = admin_client.get("/api/v1/analytics/overview?period=7d").json()
    assert week["revenue"]["period_usd"] == "15.50" and len(week["daily"]) == 2
    everything = admin_client.get("/api/v1/analytics/overview?period=all").json()
    assert everything["revenue"]["period_usd"] == everything["revenue"]["all_time_usd"] == "135.50"
    assert everything["customers"]["new_in_period"] == 2
    assert (
        min(row["date"] for row in everything["daily"])
        >= (datetime.now(UTC) - timedelta(days=90)).date().isoformat()
    )
    bad = admin_client.get("/api/v1/analytics/overview?period=1y")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "period"


def test_an_organization_without_payments(admin_client):
    body = admin_client.get("/api/v1/analytics/overview").json()
    assert body["revenue"] == {
        "period_usd": "0.00",
        "period_transactions": 0,
        "all_time_usd": "0.00",
        "all_time_transactions": 0,
    }
    assert (body["daily"], body["top_tokens"], body["conversion_rate"]) == ([], [], 0.0)


def test_a_period_counts_from_its_exact_start_inside_the_first_day(organization):
    now = datetime(2026, 3, 20, 15, 0, tzinfo=UTC)
    start = now - timedelta(days=7)  # 13 March, 15:00 UTC: that day is only partly in the period
    for usd, when in (
        ("1.00", start - timedelta(minutes=1)),
        ("2.00", start + timedelta(minutes=1)),
        ("4.00", start + timedelta(days=1)),
        ("8.00", now - timedelta(minutes=5)),
    ):
        _paid(organization, usd, when)
    body = analytics_overview(organization=organization, period="7d", now=now)
    assert body["revenue"]["period_usd"] == "14.00" and body["revenue"]["period_transactions"] == 3
    assert body["revenue"]["all_time_usd"] == "15.00"
    assert body["daily"] == [
        {"date": "2026-03-13", "transactions": 1, "revenue_usd": "2.00"},
        {"date": "2026-03-14", "transactions": 1, "revenue_usd": "4.00"},
        {"date": "2026-03-20", "transactions": 1, "revenue_usd": "8.00"},
    ]
    assert [t["revenue_usd"] for t in body["top_tokens"]] == ["14.00"]


def test_the_rollup_is_rebuilt_from_the_transactions(organization, shop):
    before = sorted(
        RevenueDay.objects.values_list("day", "payment_link_id", "chain_id", "transactions", "amount_usd")
    )
    assert (
        len(before) == 5 and sum(row[3] for row in before) == 5
    )  # four of this shop and the other organization's
    RevenueDay.objects.filter(organization=organization).update(transactions=0, amount_usd=0)  # drifted
    assert revenue_rebuild(organization=organization) == 4
    after = sorted(
        RevenueDay.objects.values_list("day", "payment_link_id", "chain_id", "transactions", "amount_usd")
    )
    assert after == before
    assert analytics_overview(organization=organization, period="all")["revenue"]["all_time_usd"] == "135.50"


def test_rebuild_revenue_rebuilds_one_organization_and_refuses_an_unknown_one(organization, shop, capsys):
    from django.core.management import CommandError, call_command

    RevenueDay.objects.filter(organization=organization).delete()

    call_command("rebuild_revenue", "--org", organization.slug)

    assert capsys.readouterr().out.strip() == "4 rollup rows written."
    assert RevenueDay.objects.filter(organization=organization).count() == 4
    with pytest.raises(CommandError, match="No organization 'nope'"):
        call_command("rebuild_revenue", "--org", "nope")
