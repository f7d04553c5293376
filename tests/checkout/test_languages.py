"""The payer's pages in the payer's language: chosen from Accept-Language, switched by the page's links,
remembered; amounts in the locale's figures; every catalog complete."""

from __future__ import annotations

import re
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.test import Client
from django.utils import translation

from checkout.templatetags.pay import units
from core.locales import available_languages, catalogs

pytestmark = pytest.mark.django_db


def _link(admin_client, **extra) -> dict:
    from tests.orders.conftest import RECIPIENT, USDC_BASE

    response = admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Poster",
            "amount": "1234500000",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
            **extra,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_the_browser_language_chooses_the_page_language_and_its_figures(admin_client, tokens):
    link = _link(admin_client)
    spanish = Client(HTTP_ACCEPT_LANGUAGE="es-ES,es;q=0.9,en;q=0.5").get(f"/pay/{link['short_code']}")
    html = spanish.content.decode()
    assert '<html lang="es">' in html and "Pagar con" in html and "Elige un token…" in html
    assert "1\u00a0234,5 USDC" in html  # 1234.5 in Spanish figures (a no-break space groups the thousands)
    assert spanish["Content-Language"] == "es" and "Accept-Language" in spanish["Vary"]

    english = Client(HTTP_ACCEPT_LANGUAGE="en-GB,en;q=0.9").get(f"/pay/{link['short_code']}")
    text = english.content.decode()
    assert (
        '<html lang="en">' in text and "Pay with" in text and "1,234.5 USDC" in text
    )  # not the cached es page
    unknown = Client(HTTP_ACCEPT_LANGUAGE="tlh").get(f"/pay/{link['short_code']}").content.decode()
    assert '<html lang="en">' in unknown  # a language without a catalog: English


def test_the_switch_keeps_the_page_parameters_and_the_choice_is_remembered(admin_client, tokens):
    link = _link(admin_client)
    payer = Client(HTTP_ACCEPT_LANGUAGE="en")
    page = payer.get(f"/pay/{link['short_code']}?client_reference_id=cart-9&utm_source=mail").content.decode()
    assert (
        'href="?client_reference_id=cart-9&amp;utm_source=mail&amp;lang=es" lang="es" hreflang="es">Español</a>'
        in page
    )
    switched = payer.get(f"/pay/{link['short_code']}?client_reference_id=cart-9&utm_source=mail&lang=es")
    assert "Pagar con" in switched.content.decode()
    cookie = switched.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "es" and cookie["httponly"] and cookie["samesite"] == "Lax"
    later = payer.get(f"/pay/{link['short_code']}").content.decode()  # the cookie, over Accept-Language: en
    assert "Pagar con" in later and '<span aria-current="true" lang="es">Español</span>' in later
    assert "Pay with" in payer.get(f"/pay/{link['short_code']}?lang=en").content.decode()
    refused = payer.get(f"/pay/{link['short_code']}?lang=<script>").content.decode()
    assert "<script>" not in refused.split("<body>")[1].split("<script")[0]  # an unknown code is ignored


def test_a_form_error_and_a_typed_decimal_comma_in_spanish(admin_client, tokens):
    link = _link(admin_client, amount=None, min_amount="1000000")
    payer = Client(HTTP_ACCEPT_LANGUAGE="es")
    refused = payer.post(f"/pay/{link['short_code']}", {"amount": "", "pay_with": ""})
    assert refused.status_code == 400
    assert "Introduce un importe mayor que cero." in refused.content.decode()
    assert "Elige el token con el que pagas." in refused.content.decode()
    from tests.orders.conftest import USDC_BASE

    paid = payer.post(f"/pay/{link['short_code']}", {"amount": "2,5", "pay_with": f"8453:{USDC_BASE}"})
    assert paid.status_code == 302
    from checkout.models import CheckoutSession

    session = CheckoutSession.objects.get()
    assert session.amount == 2_500_000 and session.locale == "es"
    page = payer.get(paid["Location"]).content.decode()
    assert "Envía exactamente" in page and "Copiar dirección" in page
    assert '"payWith": "Pagar con {wallet}"' in page  # the wallet script's sentences too


@pytest.mark.parametrize(
    ("language", "figure"), [("en", "1,234,567.000001"), ("es", "1\u00a0234\u00a0567,000001")]
)
def test_amounts_keep_every_digit_in_the_locale_figures(language, figure):
    with translation.override(language):
        assert units("1234567.000001") == figure
        assert units("0.5") == ("0.5" if language == "en" else "0,5")
        assert units("not a number") == "not a number"


def test_every_catalog_is_complete_and_keeps_the_placeholders():
    found = catalogs(settings.BASE_DIR)
    assert "es" in found and ("es", "Español") in available_languages(settings.BASE_DIR)
    placeholder = re.compile(r"%\(\w+\)[sd]|\{\w+\}|<[^>]+>")
    for code, path in found.items():
        po = polib.pofile(str(path))
        assert po.percent_translated() == 100, (code, [e.msgid for e in po.untranslated_entries()])
        assert not po.fuzzy_entries(), code
        for entry in po:
            translations = entry.msgstr_plural.values() if entry.msgid_plural else [entry.msgstr]
            for text in translations:
                assert sorted(placeholder.findall(text)) == sorted(placeholder.findall(entry.msgid)), (
                    code,
                    entry.msgid,
                )
        assert Path(path).with_suffix(".mo").exists(), f"{code}: run manage.py compile_catalogs"
