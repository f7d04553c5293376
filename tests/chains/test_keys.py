"""The keys at the chain boundary are taken apart in one place, exactly as they were written."""

import pytest

from chains.keys import Funds, OwnerKind, Step, kind_key, outbox_key, owner_id, tx_key


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


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        (lambda: outbox_key(OwnerKind.ORDER, "7f0c", Step.SWEEP), "order:7f0c:sweep"),
        (lambda: outbox_key(OwnerKind.ORDER, "7f0c", Step.REFUND, 12, "rest"), "order:7f0c:refund:12:rest"),
        (lambda: outbox_key(OwnerKind.REFUND, "rtu_1", Step.SWEEP_RETURN, 4), "refund:rtu_1:sweep-return:4"),
        (lambda: outbox_key(OwnerKind.INVENTORY, 3, Step.REFILL, 9), "inventory:3:refill:9"),
        (lambda: kind_key(OwnerKind.CHAINS, Step.DEPLOY, 31337), "chains:deploy-factory:31337"),
        (lambda: kind_key(OwnerKind.INVENTORY, Step.DEPLOY, 8453), "inventory:router:8453"),
        (
            lambda: kind_key(OwnerKind.INVENTORY, Step.ALLOWANCE, 8453, "0xabc"),
            "inventory:router-allowance:8453:0xabc",
        ),
        (lambda: kind_key(OwnerKind.RELAY, Step.ALLOWANCE, 1, "0xa", "0xb"), "relay:allowance:1:0xa:0xb"),
        (lambda: kind_key(OwnerKind.NONCE, Step.NONCE, 1, "0xA", 5), "nonce:1:0xA:5"),
    ],
)
def test_a_key_written_is_the_string_stored_before_keys_were_typed(written, stored):
    assert written() == stored
    assert str(tx_key(stored)) == stored


@pytest.mark.parametrize(
    ("key", "step", "owner"),
    [
        ("chains:deploy-factory:31337:attempt-2", Step.DEPLOY, "chains:deploy-factory"),
        ("inventory:router:8453", Step.DEPLOY, "inventory:router"),
        ("inventory:router-allowance:8453:0xabc:0", Step.ALLOWANCE, "inventory:router-allowance"),
        ("relay:allowance:1:0xa:0xb:0", Step.ALLOWANCE, "relay:allowance"),
        ("nonce:1:0xA:5", Step.NONCE, "nonce:1"),
        ("inventory:3:refill:9:0", Step.REFILL, "inventory:3"),
    ],
)
def test_a_kinds_own_transaction_names_its_step_after_the_kind(key, step, owner):
    parsed = tx_key(key)
    assert (parsed.step, parsed.owner) == (step, owner)


def test_a_kinds_own_step_is_not_written_as_a_records():
    with pytest.raises(ValueError, match="kind_key"):
        outbox_key(OwnerKind.CHAINS, "x", Step.DEPLOY)


@pytest.mark.django_db
def test_every_outbox_row_keeps_its_key_taken_apart():
    """However a row is created, its owner, step and funds are its key's, for readers and the ledger."""
    from chains.models import OutboxTx

    fields = {"chain_id": 1, "sender": "0x" + "1" * 40, "to": "0x" + "2" * 40}
    OutboxTx.objects.create(key="quickpay:qp_1:refund:9", signer="vault", **fields)
    OutboxTx.objects.get_or_create(key="chains:deploy-factory:1", defaults={"signer": "deployer", **fields})
    rows = {tx.key: (tx.owner, tx.step, tx.funds) for tx in OutboxTx.objects.all()}
    assert rows == {
        "quickpay:qp_1:refund:9": ("quickpay:qp_1", Step.REFUND, Funds.PAYER),
        "chains:deploy-factory:1": ("chains:deploy-factory", Step.DEPLOY, Funds.OPERATOR),
    }


@pytest.mark.django_db
def test_staff_filter_the_outbox_by_step_and_find_an_owners_transactions(staff):
    from chains.models import OutboxTx

    fields = {"chain_id": 1, "sender": "0x" + "1" * 40, "to": "0x" + "2" * 40}
    OutboxTx.objects.create(key="quickpay:qp_1:payout", signer="vault", **fields)
    OutboxTx.objects.create(key="quickpay:qp_1:refund:9", signer="vault", **fields)
    OutboxTx.objects.create(key="order:7f0c:sweep", signer="vault", **fields)

    refunds = staff.get("/admin/chains/outboxtx/", {"step": "refund"})
    owners = staff.get("/admin/chains/outboxtx/", {"q": "quickpay:qp_1"})

    assert refunds.status_code == owners.status_code == 200
    assert b"quickpay:qp_1:refund:9" in refunds.content and b"quickpay:qp_1:payout" not in refunds.content
    assert b"quickpay:qp_1:payout" in owners.content and b"order:7f0c:sweep" not in owners.content
