"""Analytics, products, discount codes and customers: the member's organization's only."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from tests.dashboard.conftest import make_member, signed_in
from tests.factories import (
    CustomerFactory,
    DiscountCodeFactory,
    OrganizationFactory,
    ProductFactory,
    RevenueDayFactory,
)

pytestmark = pytest.mark.django_db


def test_each_page_lists_this_organizations_records_only(organization, tokens):
    other = OrganizationFactory(slug="other")
    ProductFactory(organization=organization, name="Mug")
    ProductFactory(organization=other, name="Their mug")
    DiscountCodeFactory(organization=organization, code="SPRING10")
    DiscountCodeFactory(organization=other, code="THEIRS10")
    CustomerFactory(organization=organization, name="Ada", email="ada@example.com")
    CustomerFactory(organization=other, name="Grace")
    RevenueDayFactory(
        organization=organization, day=timezone.now().date(), amount_usd=Decimal("7.50"), transactions=3
    )
    RevenueDayFactory(
        organization=other, day=timezone.now().date(), amount_usd=Decimal("999"), transactions=9
    )
    browser = signed_in(make_member(organization))
    pages = {
        "/dashboard/products/": ("Mug", "Their mug"),
        "/dashboard/discount-codes/": ("SPRING10", "THEIRS10"),
        "/dashboard/customers/": ("ada@example.com", "Grace"),
        "/dashboard/analytics/?period=7d": ('id="period-revenue">$7.50<', "999"),
    }
    for path, (mine, theirs) in pages.items():
        page = browser.get(path).content.decode()
        assert mine in page and theirs not in page, path
    found = browser.get("/dashboard/customers/", {"q": "ada@example.com"}).content.decode()
    assert found.count('<td class="hide-small">ada@example.com</td>') == 1
    assert (
        browser.get("/dashboard/analytics/?period=forever").status_code == 200
    )  # an unknown period: 30 days
