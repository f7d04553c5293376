import pytest

from orders.models import CheckoutSession, Order
from orders.services import order_record_deposit
from tests.orders.conftest import order_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def order(api_client, tokens):
    created = api_client.post("/orders", order_body(clientReferenceId="ref-77"), format="json").json()["data"]
    order = Order.objects.get(pk=created["id"])
    order_record_deposit(order=order, chain=8453, tx_hash="0x" + "a" * 64, amount=5, from_address=None)
    return order


@pytest.mark.parametrize(
    "url",
    [
        "/admin/orders/order/",
        "/admin/orders/order/?status__exact=scanning_deposit_transaction&type__exact=swap&src_chain=8453",
        "/admin/orders/checkoutsession/",
        "/admin/chains/token/?chain_id=8453",
        "/admin/webhooks/webhookevent/",
    ],
)
def test_order_admin_pages_render(staff, order, url):
    CheckoutSession.objects.create(expires_at=order.expired_at)
    assert staff.get(url).status_code == 200


def test_order_page_shows_its_deposits_inline(staff, order):
    page = staff.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert "0x" + "a" * 64 in page


@pytest.mark.parametrize("term", ["ref-77", "0x1111111111111111111111111111111111111111"])
def test_search_finds_orders_by_reference_and_address(staff, order, term):
    page = staff.get(f"/admin/orders/order/?q={term}").content.decode()
    assert str(order.pk) in page


def test_offline_providers_are_labelled(staff):
    assert "OFFLINE providers" in staff.get("/admin/").content.decode()
