"""axe-core (the npm package, pinned in tools/package.json) on every state of the hosted page and the
widgets, at phone and desktop sizes, in English and Spanish: no serious or critical violation. Each state is
kept as a screenshot under var/artifacts/hosted/a11y/ ({language}-{size}-{state}.png), and the totals of
what axe checked and found are written to var/artifacts/hosted/a11y/axe-totals.json.

The states are reached the way the money path reaches them (orders.lifecycle: a deposit recorded, part of
one, the order failed and refunded, executed), without a chain: what a page shows is read from the records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from checkout import payments
from checkout.models import CheckoutSession
from checkout.sessions import session_expire
from orders import lifecycle
from orders.models import Order, RefundTx, RelayTx
from tests.checkout.test_widgets import CONFIGS
from tests.orders.conftest import RECIPIENT, USDC_BASE

ARTIFACTS = Path(settings.BASE_DIR) / "var" / "artifacts" / "hosted" / "a11y"
AXE = Path(settings.BASE_DIR) / "tools" / "node_modules" / "axe-core" / "axe.min.js"
SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 800}}
PAYER = "0x" + "4" * 40

pytestmark = pytest.mark.django_db(transaction=True)


def _link(admin_client) -> dict:
    return admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Poster",
            "description": "A2, printed on demand.",
            "amount": "12500000",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
            "items": [{"name": "Poster", "amount": "10500000"}, {"name": "Frame", "amount": "2000000"}],
            "form_schema": {"fields": [{"id": "email", "type": "email", "label": "Email", "required": True}]},
            "shipping_options": [{"id": "post", "name": "Post", "amount": "1000000", "estimated_days": 3}],
            "return_url": "https://shop.example/thanks",
            "fee_on_top": True,
        },
        format="json",
    ).json()


def _session(link: dict, client: Client) -> tuple[CheckoutSession, Order]:
    started = client.post(
        f"/pay/{link['short_code']}",
        {"pay_with": f"8453:{USDC_BASE}", "field_email": "payer@example.com", "shipping_option": "post"},
    )
    assert started.status_code == 302, started.content.decode()[:500]
    session = CheckoutSession.objects.get(pk=started["Location"].rsplit("/", 1)[1])
    return session, payments.session_current_order(session)


def _deposit(order: Order, amount: int, n: int) -> None:
    lifecycle.order_record_deposit(
        order=Order.objects.get(pk=order.pk),
        chain=8453,
        tx_hash="0x" + f"{n:02x}" * 32,
        amount=amount,
        from_address=PAYER,
    )


def _states(admin_client) -> dict[str, str]:
    """Each state's path, reached through the services."""
    link = _link(admin_client)
    payer = Client()
    states = {"link": f"/pay/{link['short_code']}"}
    pay, _ = _session(link, payer)
    states["pay"] = f"/pay/s/{pay.id}"
    partial, partial_order = _session(link, payer)
    _deposit(partial_order, int(partial_order.src_amount) // 2, 1)
    states["partial"] = f"/pay/s/{partial.id}"
    processing, processing_order = _session(link, payer)
    _deposit(processing_order, int(processing_order.src_amount), 2)
    states["processing"] = f"/pay/s/{processing.id}"
    complete, complete_order = _session(link, payer)
    _deposit(complete_order, int(complete_order.src_amount), 3)
    for step in ("sending_token_from_vault", "relay"):
        lifecycle.order_advance(order=Order.objects.get(pk=complete_order.pk), to_status=step)
    RelayTx.objects.create(order=complete_order, chain=8453, tx_hash="0x" + "c" * 64, status="success")
    lifecycle.order_mark_executed(order=Order.objects.get(pk=complete_order.pk), actual_dst_amount="12500000")
    states["complete"] = f"/pay/s/{complete.id}"
    failed, failed_order = _session(link, payer)
    _deposit(failed_order, int(failed_order.src_amount), 4)
    lifecycle.order_fail(order=Order.objects.get(pk=failed_order.pk), error="SLIPPAGE: test")
    RefundTx.objects.create(
        order=failed_order,
        deposit=failed_order.deposit_txs.get(),  # back to the address it came from, which the page shows
        chain=8453,
        tx_hash="0x" + "b" * 64,
        amount=failed_order.src_amount,
        status="success",
    )
    lifecycle.order_refunded(order=Order.objects.get(pk=failed_order.pk), refund_tx_hash="0x" + "b" * 64)
    states["failed"] = f"/pay/s/{failed.id}"
    expired, _ = _session(link, payer)
    session_expire(session_id=expired.id, reason="timeout")
    states["expired"] = f"/pay/s/{expired.id}"
    for name, config in (("checkout", CONFIGS["checkout"]), ("deposit", CONFIGS["deposit"])):
        widget = admin_client.post(
            "/api/v1/widgets",
            {"name": f"Tip jar {name}", "widget_type": name, "config": config},
            format="json",
        ).json()
        states[f"widget-{name}"] = f"/widgets/{widget['short_code']}"
    closed = _link(admin_client)
    admin_client.patch(f"/api/v1/payment-links/{closed['id']}", {"is_active": False}, format="json")
    states["unavailable"] = f"/pay/{closed['short_code']}"
    return states


def _axe(page) -> dict:
    page.evaluate(AXE.read_text())  # by the devtools protocol: the page's own CSP stays as it is
    return page.evaluate(
        """() => axe.run(document, {resultTypes: ['violations']}).then(r => ({
            violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                targets: v.nodes.map(n => n.target.join(' '))})),
            passes: r.passes.length, incomplete: r.incomplete.length}))"""
    )


def test_no_serious_or_critical_violation_in_any_state_size_or_language(
    admin_client, tokens, live_server, browser_page
):
    if not AXE.exists():
        pytest.skip("axe-core is not installed (make install installs it from the npm registry)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    states = _states(admin_client)
    browser = browser_page.context.browser
    totals = {"pages": 0, "violations": {}, "serious_or_critical": 0}
    bad = []
    for language in ("en", "es"):
        for size, viewport in SIZES.items():
            context = browser.new_context(
                viewport=viewport, locale=language, extra_http_headers={"Accept-Language": language}
            )
            page = context.new_page()
            for state, path in states.items():
                page.goto(f"{live_server.url}{path}")
                if state == "link":  # the form, then the form sent empty: the errors beside each field
                    _check(page, language, size, "link", totals, bad)
                    page.get_by_role("button", name="Pay" if language == "en" else "Pagar").click()
                    page.wait_for_selector("#form-error")
                    state = "errors"  # the page shown now is the errors'
                _check(page, language, size, state, totals, bad)
            context.close()
    (ARTIFACTS / "axe-totals.json").write_text(json.dumps(totals, indent=2, sort_keys=True))
    assert not bad, bad
    assert totals["pages"] == 2 * 2 * (len(states) + 1)


def _check(page, language, size, state, totals, bad) -> None:
    assert page.evaluate("document.documentElement.lang") == language
    result = _axe(page)
    totals["pages"] += 1
    for violation in result["violations"]:
        key = f"{violation['id']} ({violation['impact']})"
        totals["violations"][key] = totals["violations"].get(key, 0) + 1
        if violation["impact"] in ("serious", "critical"):
            totals["serious_or_critical"] += 1
            bad.append((language, size, state, violation["id"], violation["help"], violation["targets"][:3]))
    page.screenshot(path=ARTIFACTS / f"{language}-{size}-{state}.png", full_page=True)


def test_the_pay_step_works_from_the_keyboard(admin_client, tokens, live_server, browser_page):
    states = _states(admin_client)
    page = browser_page
    page.goto(f"{live_server.url}{states['pay']}")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    reached = []
    for _ in range(20):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("document.activeElement.textContent.trim()"))
        if reached[-1] == "Copy address":
            page.keyboard.press("Enter")
            break
    assert "Copy amount" in reached and reached[-1] == "Copy address"
    assert page.inner_text("#copied").startswith("Address copied: 0x")
    # Past the address: the other token, then the language switch.
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == "Español":
            with page.expect_navigation():
                page.keyboard.press("Enter")
            break
    assert page.evaluate("document.documentElement.lang") == "es"
    outline = page.evaluate(
        "() => { const b = document.querySelector('button.copy'); b.focus(); return getComputedStyle(b).outlineStyle; }"
    )
    assert outline == "solid"  # the focus ring shows where the keyboard is


def test_hostile_merchant_text_neither_runs_nor_breaks_the_layout(
    admin_client, tokens, live_server, browser_page
):
    page = browser_page
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    long_word = "W" * 60  # names are at most 100 characters; one word of 60 is wider than a phone
    assert (
        admin_client.patch(
            "/api/v1/organization",
            {"name": f'<img src=x onerror=alert("org")>{long_word * 2}'},
            format="json",
        ).status_code
        == 200
    )
    admin_client.patch(
        "/api/v1/organization", {"support_url": "https://shop.example/?q=%22%3E%3Cscript%3E"}, format="json"
    )
    link = admin_client.post(
        "/api/v1/payment-links",
        {
            "name": f"<script>alert('name')</script>{long_word}",
            "description": '"><svg onload=alert("description")>' + long_word,
            "amount": "1000000",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
            "items": [{"name": "</td><script>alert('item')</script>" + long_word, "amount": "1000000"}],
            "form_schema": {
                "fields": [{"id": "x", "type": "text", "label": "<b onmouseover=alert(1)>" + long_word}]
            },
            "button_text": "<i>Pay</i>",
            "return_label": "<script>alert('back')</script>",
        },
        format="json",
    ).json()
    for path in (f"/pay/{link['short_code']}",):
        page.goto(f"{live_server.url}{path}")
        page.mouse.move(100, 300)
        assert (
            page.evaluate("document.documentElement.scrollWidth") <= 390
        )  # no sideways scrolling on a phone
        assert page.get_by_role("button", name="<i>Pay</i>").is_visible()  # the merchant's text, as text
    page.screenshot(path=ARTIFACTS / "hostile-link.png", full_page=True)
    assert dialogs == []
