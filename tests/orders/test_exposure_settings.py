"""What turns delivery on first sight on: a chain's `front_confirmations` (1 up to its confirmations; 0, the
pool, refused) and `manage.py inventory exposure`, whose bad numbers are refused beside their field and change
nothing (issue 66)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from chains.registry import ChainError, chain_from_entry
from orders.models import ExposureLimit

pytestmark = pytest.mark.django_db

TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"


def entry(**fields) -> dict:
    return {"chain_id": 8453, "name": "Base", "native_symbol": "ETH", "confirmations": 3} | fields


def test_a_chain_fronts_early_only_below_its_confirmations():
    assert chain_from_entry(entry()).sights_early is False
    early = chain_from_entry(entry(front_confirmations=1))
    assert early.sights_early and early.sighted_through(100) == 100 and early.confirmed_through(100) == 98
    assert chain_from_entry(entry(front_confirmations=3)).sights_early is False  # the same as counting
    with pytest.raises(ChainError, match="pool"):
        chain_from_entry(entry(front_confirmations=0))
    with pytest.raises(ChainError, match="must not exceed confirmations"):
        chain_from_entry(entry(front_confirmations=4))


def test_the_exposure_command_sets_a_limit_and_refuses_a_bad_one_without_writing(devnets_registry, capsys):
    args = ["--max-payment", "500", "--max-per-payer", "2000", "--max-outstanding", "10000"]
    call_command("inventory", "exposure", "31337", TOKEN, *args)
    limit = ExposureLimit.objects.get()
    assert (limit.chain_id, limit.token, int(limit.max_payment), int(limit.max_outstanding)) == (
        31337,
        TOKEN,
        500,
        10000,
    )
    assert "Added the exposure limit" in capsys.readouterr().out
    for bad, field in (
        (["31337", "0x0000000000000000000000000000000000000000", *args], "token"),
        (["99999", TOKEN, *args], "chain_id"),
        (["31337", TOKEN, "--max-payment", "-1", *args[2:]], "max_payment"),
    ):
        with pytest.raises(CommandError, match=field):
            call_command("inventory", "exposure", *bad)
    assert ExposureLimit.objects.count() == 1 and int(ExposureLimit.objects.get().max_payment) == 500
