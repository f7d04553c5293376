"""The keys at the chain boundary are taken apart in one place, exactly as they were written."""

import pytest

from chains.handlers import OwnerKind
from chains.keys import Step, owner_id, tx_key


@pytest.mark.parametrize(
    ("key", "kind", "identifier", "step", "detail"),
    [
        ("order:7f0c:sweep", OwnerKind.ORDER, "7f0c", Step.SWEEP, ""),
        ("order:7f0c:sweep:42", OwnerKind.ORDER, "7f0c", Step.SWEEP, "42"),
        ("order:7f0c:relay:0", OwnerKind.ORDER, "7f0c", Step.RELAY, "0"),
        ("quickpay:qp_1:return:9", OwnerKind.QUICKPAY, "qp_1", Step.RETURN, "9"),
        ("refund:re_1:delivery", OwnerKind.REFUND, "re_1", Step.DELIVERY, ""),
        ("refund:rbw_1:withdrawal", OwnerKind.REFUND, "rbw_1", Step.WITHDRAWAL, ""),
        ("x402:5d1e:settle", OwnerKind.X402, "5d1e", Step.SETTLE, ""),
        ("order:7f0c:swep", OwnerKind.ORDER, "7f0c", None, ""),  # a misspelt step is no step, not an else
    ],
)
def test_a_key_is_read_as_it_was_written(key, kind, identifier, step, detail):
    parsed = tx_key(key)
    assert (parsed.kind, parsed.id, parsed.step, parsed.detail) == (kind, identifier, step, detail)
    assert f"{parsed.kind}:{parsed.id}" + (f":{parsed.what}" if parsed.what else "") == key


def test_a_step_matches_with_or_without_what_follows_it():
    assert tx_key("order:1:sweep").is_(Step.SWEEP, detail=False)
    assert not tx_key("order:1:sweep:5").is_(Step.SWEEP, detail=False)
    assert tx_key("order:1:sweep:5").is_(Step.SWEEP, detail=True) and tx_key("order:1:sweep:5").is_(
        Step.SWEEP
    )
    assert not tx_key("order:1").is_(Step.SWEEP) and tx_key("order:1").what == ""


def test_an_owner_stored_under_its_older_name_is_read_as_its_kind():
    assert tx_key("quick_payment:qp_1").kind == OwnerKind.QUICKPAY
    assert owner_id("quick_payment:qp_1") == "qp_1" and owner_id("refund:rtu_2") == "rtu_2"
