"""A payer who pays again with another email: the customer keeps the newest one they gave."""

from __future__ import annotations

import pytest
from django.test import Client

from checkout.models import CheckoutSession
from merchant.models import Customer
from orders.lifecycle import order_advance, order_mark_executed, order_record_deposit, order_transition
from orders.models import Order
from tests.orders.conftest import EMAIL_FIELD, USDC_BASE, poster_link

pytestmark = pytest.mark.django_db

WALLET = "0x" + "4" * 40


@pytest.fixture
def link(admin_client, tokens):
    optional = {"fields": [{**EMAIL_FIELD["fields"][0], "required": False}]}
    return poster_link(admin_client, form_schema=optional)


def _paid(link, email: str, n: int) -> None:
    form = {"pay_with": f"8453:{USDC_BASE}"} | ({"field_email": email} if email else {})
    assert Client().post(f"/pay/{link['short_code']}", form).status_code == 302
    session = CheckoutSession.objects.order_by("-created_at").first()
    order = Order.objects.get(session_order__session=session)
    order_record_deposit(
        order=order, chain=8453, tx_hash=f"0x{n:064x}", amount=int(order.src_amount), from_address=WALLET
    )
    order_advance(order=order, to_status="sending_token_from_vault")
    order_transition(
        order,
        from_statuses=["sending_token_from_vault"],
        to_status="relay",
        settlement={"dstAmount": order.payload["expectedDstAmount"]},
    )
    assert order_mark_executed(order=order, actual_dst_amount=order.payload["expectedDstAmount"])


def test_the_newest_email_a_repeat_payer_gave_is_recorded(link, admin_client):
    _paid(link, "old@payer.example", 1)
    assert Customer.objects.get().email == "old@payer.example"
    _paid(link, "new@payer.example", 2)
    customer = Customer.objects.get()
    assert (customer.email, customer.transaction_count) == ("new@payer.example", 2)
    found = admin_client.get("/api/v1/customers?search=new@payer.example").json()["data"]
    assert [c["id"] for c in found] == [customer.id]  # its search digest follows
    _paid(link, "", 3)  # a payment without an email keeps what was known
    assert Customer.objects.get().email == "new@payer.example"
