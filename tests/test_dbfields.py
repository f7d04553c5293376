"""Uint256Field keeps token amounts exact on PostgreSQL and on SQLite (whose DECIMAL keeps 15 digits)."""

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from quickpay.models import QuickPayment

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("tokens")]

USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


def _payment(amount: int) -> QuickPayment:
    """A row with this amount (the field's range, not the service's: it refuses amounts worth more than any
    payment)."""
    return QuickPayment.objects.create(
        amount=amount,
        token_address=USDC_BASE,
        chain_id=8453,
        recipient_address="0x" + "11" * 20,
        deposit_address="0x" + f"{amount % 10**40:040x}",
        expires_at=timezone.now(),
    )


def test_amounts_come_back_exactly_and_compare_and_sort_as_numbers():
    amounts = [2**256 - 1, 10**18 + 1, 10**18, 9, 10]
    for amount in amounts:
        _payment(amount)

    stored = list(QuickPayment.objects.order_by("amount").values_list("amount", flat=True))
    assert stored == sorted(amounts)
    assert QuickPayment.objects.filter(amount__gt=10**18).count() == 2
    assert QuickPayment.objects.get(amount=10**18 + 1).amount == 10**18 + 1


@pytest.mark.parametrize("amount", [-1, 2**256, "1.5", "many"])
def test_what_is_not_a_uint256_is_refused_before_the_database(amount):
    with pytest.raises(ValidationError):
        QuickPayment.objects.filter(amount=amount).exists()
