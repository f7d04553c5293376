"""The dashboard's pages show the member's organization only, whatever id is in the address."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils import timezone

from dashboard.auth import member_view
from dashboard.roles import WRITE
from orders.models import OrderStatusChange
from tests.dashboard.conftest import make_member, signed_in
from tests.factories import (
    OrderFactory,
    OrganizationFactory,
    RevenueDayFactory,
    TransactionFactory,
    WebhookEndpointFactory,
)

pytestmark = pytest.mark.django_db


def test_home_shows_today_this_month_the_chart_recent_payments_and_what_needs_attention(
    organization, viewer, tokens
):
    today = timezone.now().date()
    RevenueDayFactory(organization=organization, day=today, amount_usd=Decimal("12.50"), transactions=2)
    RevenueDayFactory(
        organization=organization,
        day=today,
        amount_usd=Decimal("2.50"),
        transactions=1,
        payment_link_id="pl_x",
    )
    if today.day > 1:
        RevenueDayFactory(
            organization=organization, day=today - timedelta(days=1), amount_usd=Decimal("5"), transactions=1
        )
    other = OrganizationFactory(slug="other")
    RevenueDayFactory(organization=other, day=today, amount_usd=Decimal("999"), transactions=9)
    TransactionFactory(organization=organization, status="completed", amount=4_000_000)
    TransactionFactory(organization=other, status="completed")
    WebhookEndpointFactory(
        organization=organization, is_active=False, disabled_reason="failed 10 times in a row"
    )
    page = signed_in(viewer).get("/dashboard/").content.decode()
    assert 'id="today-revenue">$15.00<' in page
    expected_month = "20.00" if today.day > 1 else "15.00"
    assert f'id="month-revenue">${expected_month}<' in page
    assert page.count("<rect ") == 30 and "999" not in page
    assert "4 USDC" in page and page.count('class="badge completed"') == 1  # the other's payment is not here
    assert "is disabled: failed 10 times in a row" in page


def test_payments_filter_search_and_answer_htmx_with_the_table_only(organization, viewer, tokens):
    paid = TransactionFactory(organization=organization, status="completed", tx_hash="0x" + "ab" * 32)
    TransactionFactory(organization=organization, status="failed")
    TransactionFactory(
        organization=OrganizationFactory(slug="other"), status="completed", tx_hash="0x" + "ab" * 32
    )
    browser = signed_in(viewer)
    everything = browser.get("/dashboard/payments/").content.decode()
    assert everything.count("/dashboard/payments/txn_") == 2
    completed = browser.get("/dashboard/payments/?status=completed").content.decode()
    assert completed.count("/dashboard/payments/txn_") == 1 and paid.id in completed
    by_hash = browser.get("/dashboard/payments/", {"q": "0x" + "AB" * 32})
    assert by_hash.content.decode().count("/dashboard/payments/txn_") == 1
    partial = browser.get("/dashboard/payments/?status=failed", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and partial.count("/dashboard/payments/txn_") == 1
    assert (
        browser.get("/dashboard/payments/?status=<script>").status_code == 200
    )  # an unknown status: ignored


def test_a_payment_shows_its_timeline_and_another_organizations_is_not_found(organization, viewer, tokens):
    order = OrderFactory(organization=organization)
    OrderStatusChange.objects.create(
        order=order, from_status="scanning_deposit_transaction", to_status="executed", reason="delivered"
    )
    mine = TransactionFactory(organization=organization, order_id=order.pk, status="completed")
    theirs = TransactionFactory(organization=OrganizationFactory(slug="other"), status="completed")
    browser = signed_in(viewer)
    page = browser.get(f"/dashboard/payments/{mine.id}").content.decode()
    assert "delivered" in page and 'id="payment-status">completed<' in page
    assert browser.get(f"/dashboard/payments/{theirs.id}").status_code == 404
    assert browser.get("/dashboard/payments/txn_doesnotexist000000000000").status_code == 404


def test_a_role_without_the_right_gets_403_and_the_view_never_runs(organization):
    ran = []

    @member_view(WRITE)
    def write(request):
        ran.append(request.member)
        return HttpResponse("written")

    viewer = make_member(organization, "v@shop.example", "viewer")
    admin = make_member(organization, "a@shop.example", "admin")
    for member, status in ((viewer, 403), (admin, 200)):
        client = signed_in(member)
        request = RequestFactory().post("/dashboard/x")
        request.user, request.session = member.user, client.session
        request.user.is_verified = lambda: False
        response = write(request)
        assert response.status_code == status
    assert ran == [admin]


def test_signed_out_visitors_are_sent_to_sign_in(organization):
    response = signed_in(make_member(organization)).get("/dashboard/")
    assert response.status_code == 200
    from django.test import Client

    anonymous = Client().get("/dashboard/payments/?status=failed")
    assert anonymous.status_code == 302
    assert anonymous["Location"] == "/dashboard/sign-in/?next=%2Fdashboard%2Fpayments%2F%3Fstatus%3Dfailed"


def test_the_vendored_htmx_is_the_pinned_npm_package():
    from pathlib import Path

    from django.conf import settings

    installed = Path(settings.BASE_DIR) / "tools" / "node_modules" / "htmx.org" / "dist" / "htmx.min.js"
    if not installed.exists():
        pytest.skip("the npm tools are not installed (make install)")
    vendored = Path(settings.BASE_DIR) / "dashboard" / "static" / "dashboard" / "vendor" / "htmx.min.js"
    assert vendored.read_bytes() == installed.read_bytes()


def test_the_payments_page_reads_a_fixed_number_of_times_however_many_rows(organization, viewer, tokens):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    browser = signed_in(viewer)
    TransactionFactory(organization=organization, status="completed")
    browser.get("/dashboard/payments/")  # the token registry warms once per process
    with CaptureQueriesContext(connection) as one:
        browser.get("/dashboard/payments/")
    TransactionFactory.create_batch(24, organization=organization, status="completed")
    with CaptureQueriesContext(connection) as many:
        browser.get("/dashboard/payments/")
    assert len(many) == len(one) <= 6, [q["sql"][:80] for q in many.captured_queries]


def test_payments_are_found_by_id_link_hash_payer_or_reference_whatever_the_case(
    organization, viewer, tokens
):
    from tests.factories import PaymentLinkFactory, PlatformCheckoutSessionFactory

    payer = "0x52908400098527886E0F7030069857D2E4169EE7"  # stored checksummed, as the watcher writes it
    link = PaymentLinkFactory(organization=organization)
    session = PlatformCheckoutSessionFactory(organization=organization, client_reference_id="order-1042")
    wanted = TransactionFactory(
        organization=organization,
        from_address=payer,
        session=session,
        payment_link=link,
        tx_hash="0x" + "cd" * 32,
    )
    TransactionFactory.create_batch(3, organization=organization, from_address="0x" + "1" * 40)
    other = OrganizationFactory(slug="other")
    TransactionFactory(organization=other, from_address=payer, tx_hash="0x" + "cd" * 32)
    PlatformCheckoutSessionFactory(organization=other, client_reference_id="order-1042")
    browser = signed_in(viewer)
    for query in (wanted.id, link.id, "0x" + "CD" * 32, payer.lower(), payer, "order-1042"):
        page = browser.get("/dashboard/payments/", {"q": query}).content.decode()
        assert page.count("/dashboard/payments/txn_") == 1 and wanted.id in page, query
    assert (
        browser.get("/dashboard/payments/", {"q": "order-9999"}).content.decode().count("/payments/txn_") == 0
    )
