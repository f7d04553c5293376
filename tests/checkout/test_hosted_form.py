"""The hosted page's form (checkout.hosted_form): every kind of field the merchant may ask, refused beside
the field with nothing made, then taken as the session's answers."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from chains.models import WatchedAddress
from checkout.models import CheckoutSession, DiscountCode
from orders.models import Order
from tests.orders.conftest import USDC_BASE, poster_link

pytestmark = pytest.mark.django_db

FIELDS = [
    {"id": "email", "type": "email", "label": "Email", "required": True},
    {"id": "size", "type": "select", "label": "Size", "options": ["S", "M"]},
    {"id": "count", "type": "number", "label": "Count"},
    {"id": "terms", "type": "checkbox", "label": "Terms", "required": True},
    {"id": "home", "type": "address", "label": "Home", "required": True},
    {"id": "note", "type": "textarea", "label": "Note"},
]
SHIPPING = [{"id": "post", "name": "Post", "amount": "1000000"}]


@pytest.fixture
def link(admin_client, tokens):
    return poster_link(
        admin_client,
        amount=None,
        form_schema={"fields": FIELDS},
        shipping_options=SHIPPING,
        collect_shipping_address=True,
    )


def messages(page: str) -> dict[str, str]:
    """Each message beside an input, by the input's id (`<id>-error`)."""
    return dict(re.findall(r'<p class="error" id="([\w-]+)-error">([^<]+)</p>', page))


def test_each_field_is_refused_beside_itself_and_nothing_is_made(link):
    refused = Client().post(
        f"/pay/{link['short_code']}",
        {
            "amount": "0",
            "field_email": "not-an-address",
            "field_size": "XL",
            "field_count": "many",
            "field_home_city": "Lisbon",  # no street: the address is not given
            "pay_with": "1:0xnot-a-token",
        },
    )
    page = refused.content.decode()
    assert refused.status_code == 400
    assert messages(page) == {
        "amount": "Enter an amount greater than zero.",
        "field_email": "Enter an email address.",
        "field_size": "Choose one of the options.",
        "field_count": "Enter a number.",
        "field_terms": "Terms is required.",
        "field_home": "Home is required.",
        "pay-with": "Choose the token you pay with.",
    }
    for message in (
        "Choose a shipping option.",
        "Enter the shipping address (street and city).",
        "Choose the token you pay with.",
    ):
        assert message in page
    assert not CheckoutSession.objects.exists()


def test_the_answers_become_the_sessions(link):
    taken = Client().post(
        f"/pay/{link['short_code']}",
        {
            "amount": "4,5",  # a decimal comma
            "field_email": "  ada@payer.example ",
            "field_size": "M",
            "field_count": "2",
            "field_terms": "on",
            "field_home_line1": " 1 Main St ",
            "field_home_city": "Lisbon",
            "field_note": "x" * 600,
            "shipping_option": "post",
            "ship_line1": "2 Side St",
            "ship_city": "Porto",
            "discount_code": "",
            "pay_with": f"8453:{USDC_BASE}",
        },
    )
    assert taken.status_code == 302, taken.content.decode()[:2000]
    session = CheckoutSession.objects.get()
    assert session.form_data == {
        "email": "ada@payer.example",
        "size": "M",
        "count": "2",
        "terms": True,
        "home": {"line1": "1 Main St", "line2": "", "city": "Lisbon", "state": "", "zip": "", "country": ""},
        "note": "x" * 500,
    }
    assert session.customer_email == "ada@payer.example"
    assert session.shipping_option == {
        "id": "post",
        "name": "Post",
        "amount": "1000000",
        "description": "",
    }
    assert session.shipping_address == {
        "line1": "2 Side St",
        "line2": "",
        "city": "Porto",
        "state": "",
        "zip": "",
        "country": "",
    }


def _answers(**more) -> dict:
    return {
        "amount": "4",
        "field_email": "ada@payer.example",
        "field_terms": "on",
        "field_home_line1": "1 Main St",
        "field_home_city": "Lisbon",
        "shipping_option": "post",
        "ship_line1": "2 Side St",
        "ship_city": "Porto",
        "pay_with": f"8453:{USDC_BASE}",
        **more,
    }


def test_a_code_entered_on_the_link_page_lowers_the_price_and_holds_one_use(link, organization):
    code = DiscountCode.objects.create(
        organization=organization, code="TEN", type="percentage", value=10, max_uses=2
    )
    taken = Client().post(f"/pay/{link['short_code']}", _answers(discount_code=" ten "))
    assert taken.status_code == 302, taken.content.decode()[:2000]
    session = CheckoutSession.objects.get()
    # 4 USDC and 1 USDC of shipping, less 10 %: what the merchant asks, and what the order must deliver.
    assert (session.amount, session.discount_amount, session.discount_code_id) == (
        4_500_000,
        500_000,
        code.id,
    )
    assert session.discount_reserved
    code.refresh_from_db()
    assert (code.reserved_uses, code.current_uses) == (1, 0)
    order = Order.objects.get(session_order__session=session)
    assert int(order.payload["expectedDstAmount"]) <= 4_500_000 < int(order.src_amount) * 2
    assert WatchedAddress.objects.filter(address=order.global_address, owner=f"order:{order.pk}").exists()


def test_a_code_with_no_use_left_refuses_the_checkout_and_writes_nothing(link, organization):
    code = DiscountCode.objects.create(
        organization=organization, code="LAST", type="fixed", value=100_000, max_uses=1, reserved_uses=1
    )
    refused = Client().post(f"/pay/{link['short_code']}", _answers(discount_code="last"))
    assert refused.status_code == 400
    assert messages(refused.content.decode()) == {"discount": "Code has reached maximum number of uses"}
    assert not CheckoutSession.objects.exists() and not Order.objects.exists()
    assert not WatchedAddress.objects.exists()
    code.refresh_from_db()
    assert (code.reserved_uses, code.current_uses) == (1, 0)
    # A code that would leave nothing to pay is refused before any quote, beside the same field.
    DiscountCode.objects.create(organization=organization, code="ALL", type="percentage", value=100)
    refused = Client().post(f"/pay/{link['short_code']}", _answers(discount_code="all"))
    assert messages(refused.content.decode()) == {"discount": "the discount leaves nothing to pay."}
    assert not CheckoutSession.objects.exists()
