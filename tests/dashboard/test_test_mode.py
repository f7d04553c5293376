"""The dashboard's test-mode switch: the pages show and change the organization's test mode (its own links,
payments, keys, audit log), the team and the member's account stay the live organization's, and a banner
says which mode the pages are in."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEvent
from chains.evm import to_checksum_address
from chains.models import Chain as ChainRow
from chains.registry import registry_forget
from checkout.models import PaymentLink
from platform_api.models import ApiKey, Organization
from tests.dashboard.conftest import make_member, signed_in
from tests.factories import PaymentLinkFactory, TokenFactory
from tests.orders.conftest import USDC_BASE

pytestmark = pytest.mark.django_db
BANNER = "You are looking at test data"
DUSDC = to_checksum_address("0x" + "d5" * 20)


def _token(page: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)


def test_the_switch_shows_the_test_modes_records_and_keys_made_there_are_test_keys(organization):
    developer = make_member(organization, "dev@shop.example", "developer")
    browser = signed_in(developer)
    live_link = PaymentLinkFactory(organization=organization, name="Live sticker")
    assert BANNER not in browser.get("/dashboard/links/").content.decode()

    switched = browser.post("/dashboard/test-mode/", {"on": "1", "next": "/dashboard/links/"})
    assert switched.status_code == 302 and switched["Location"] == "/dashboard/links/"
    page = browser.get("/dashboard/links/").content.decode()
    sandbox = Organization.objects.get(sandbox_of=organization)  # made on first use
    assert BANNER in page and "Live sticker" not in page and 'aria-checked="true"' in page
    assert browser.get(f"/dashboard/links/{live_link.id}").status_code == 404
    test_link = PaymentLinkFactory(organization=sandbox, name="Test sticker")
    assert "Test sticker" in browser.get("/dashboard/links/").content.decode()

    form = {
        "form_token": _token(browser.get("/dashboard/keys/").content.decode()),
        "name": "laptop",
        "permissions": ["read", "write"],  # a developer writes in test mode: no real money moves there
    }
    shown = browser.post("/dashboard/keys/", form, follow=True).content.decode()
    assert re.search(r'id="new-key">(svc_test_[^<]+)<', shown)
    key = ApiKey.objects.get(name="laptop")
    assert key.organization_id == sandbox.id and key.permissions == ["read", "write"]
    assert AuditEvent.objects.get(resource_id=key.id).organization_id == sandbox.id

    team = browser.get("/dashboard/team/").content.decode()
    assert "dev@shop.example" in team and BANNER in team  # the live organization's team, in either mode

    browser.post("/dashboard/test-mode/", {"on": "0", "next": "https://elsewhere.example/"})
    page = browser.get("/dashboard/links/").content.decode()
    assert BANNER not in page and "Live sticker" in page and "Test sticker" not in page
    form = {**form, "form_token": _token(browser.get("/dashboard/keys/").content.decode()), "name": "live"}
    refused = browser.post("/dashboard/keys/", form).content.decode()
    assert "makes keys with read at most" in refused and not ApiKey.objects.filter(name="live").exists()
    assert PaymentLink.objects.filter(organization=sandbox).get() == test_link


def test_in_test_mode_the_token_pickers_offer_test_chains_only(organization, tokens):
    ChainRow.objects.filter(pk=8453).update(factory_address="0x5FbDB2315678afecb367f032d93F642f64180aa3")
    registry_forget()  # Base takes payments too
    TokenFactory(chain_id=31337, address=DUSDC, symbol="dUSDC", decimals=6)
    browser = signed_in(make_member(organization, "admin@shop.example", "admin"))
    live = browser.get("/dashboard/links/new/").content.decode()
    assert f'value="8453:{USDC_BASE}"' in live and f'value="31337:{DUSDC}"' in live

    browser.post("/dashboard/test-mode/", {"on": "1"})
    test = browser.get("/dashboard/links/new/").content.decode()
    assert f'value="31337:{DUSDC}"' in test and "8453:" not in test
