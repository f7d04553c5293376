"""The ledger's one way in: balanced postings only, each business key once, and nothing ever edited."""

import pytest

from ledger.models import Account, AppendOnly, Entry, Posting
from ledger.postings import Unbalanced, account_balance, credit, debit, post

pytestmark = pytest.mark.django_db

TOKEN = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
NATIVE = "0x" + "0" * 40
FORWARDER, VAULT = "0x" + "a" * 40, "0x" + "b" * 40


def sweep(amount, key="order:1:sweep"):
    return post(
        key=key,
        kind="sweep",
        legs=[
            credit(8453, TOKEN, Account.Kind.DEPOSIT_ADDRESS, FORWARDER, amount),
            debit(8453, TOKEN, Account.Kind.VAULT, VAULT, amount),
        ],
    )


def test_a_balanced_posting_moves_value_between_accounts_exactly():
    huge = 10**30 + 1  # beyond a float's 15 digits: exact on every backend
    sweep(huge)

    vault = Account.objects.get(kind=Account.Kind.VAULT)
    forwarder = Account.objects.get(kind=Account.Kind.DEPOSIT_ADDRESS)
    assert (account_balance(vault), account_balance(forwarder)) == (huge, -huge)
    assert vault.token == TOKEN.lower() and vault.ref == VAULT


def test_the_same_business_key_posts_once():
    first = sweep(5)
    again = sweep(5)

    assert again.pk == first.pk
    assert (Posting.objects.count(), Entry.objects.count()) == (1, 2)


@pytest.mark.parametrize(
    "legs",
    [
        [debit(8453, TOKEN, "vault", VAULT, 5), credit(8453, TOKEN, "deposit_address", FORWARDER, 4)],
        # balanced in sum, not per token: the gas is in the native coin
        [debit(8453, TOKEN, "vault", VAULT, 5), credit(8453, NATIVE, "gas", "", 5)],
        # balanced per token, not per chain
        [debit(8453, TOKEN, "vault", VAULT, 5), credit(1, TOKEN, "deposit_address", FORWARDER, 5)],
        [debit(8453, TOKEN, "vault", VAULT, 0), credit(8453, TOKEN, "deposit_address", FORWARDER, 0)],
        [debit(8453, TOKEN, "vault", VAULT, True), credit(8453, TOKEN, "deposit_address", FORWARDER, True)],
        [debit(8453, TOKEN, "vault", VAULT, 5)],
    ],
)
def test_an_unbalanced_posting_is_refused_and_writes_nothing(legs):
    with pytest.raises(Unbalanced):
        post(key="order:1:bad", kind="sweep", legs=legs)

    assert (Posting.objects.count(), Entry.objects.count(), Account.objects.count()) == (0, 0, 0)


def test_postings_are_never_edited_or_removed():
    posting = sweep(5)
    entry = posting.entries.first()

    for change in (
        lambda: posting.save(),
        lambda: posting.delete(),
        lambda: entry.save(),
        lambda: entry.delete(),
        lambda: Posting.objects.filter(pk=posting.pk).update(kind="refund"),
        lambda: Entry.objects.all().delete(),
    ):
        with pytest.raises(AppendOnly):
            change()
    assert [e.amount for e in Posting.objects.get().entries.all()] == [5, 5]


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("order:5bd0f0c5-2d46-4414-8a1b-360f08118703:sweep", "sweep"),
        ("order:5bd0f0c5-2d46-4414-8a1b-360f08118703:sweep:12", "sweep"),
        ("order:5bd0f0c5-2d46-4414-8a1b-360f08118703:relay:0", "delivery"),
        ("order:5bd0f0c5-2d46-4414-8a1b-360f08118703:execute", "execution"),
        ("order:5bd0f0c5-2d46-4414-8a1b-360f08118703:refund:7:rest", "refund"),
        ("quickpay:qp_1:return:9", "refund"),
        ("quickpay:qp_1:payout", "payout"),
        ("chains:deploy-factory:31337", "deploy"),
        ("nonce:31337:0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266:5", "nonce"),
        ("relay:allowance:31337:0xe7f1725e7734ce288f8367e1bb143e90bb3f0512:0xabc:0", "allowance"),
    ],
)
def test_an_outbox_postings_kind_is_the_step_its_key_names(key, kind):
    from chains.keys import key_columns
    from ledger.observed import posting_kind

    columns = key_columns(key, "vault")
    assert posting_kind(columns["step"], columns["owner"]) == kind


@pytest.mark.django_db(transaction=True)
def test_postings_that_open_the_same_accounts_at_once_share_them():
    """Eight workers post eight movements that all open the same two accounts, at once: every posting is
    recorded, against one account of each, and the balances add up to the unit."""
    import threading

    from django.db import connection

    start = threading.Barrier(8)
    errors: list[Exception] = []

    def worker(n: int) -> None:
        try:
            start.wait()
            sweep(n + 1, key=f"order:{n}:sweep")
        except Exception as exc:  # the assertion below shows it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert Posting.objects.count() == 8
    assert Account.objects.count() == 2
    vault = Account.objects.get(kind=Account.Kind.VAULT)
    assert account_balance(vault) == sum(range(1, 9))


@pytest.mark.parametrize(
    ("key", "signer", "outsider"),
    [
        ("order:5bd0f0c5-2d46-4414-8a1b-360f08118703:relay:0", "vault", "recipient"),
        ("order:5bd0f0c5-2d46-4414-8a1b-360f08118703:execute", "solver", "recipient"),
        ("order:5bd0f0c5-2d46-4414-8a1b-360f08118703:refund:7", "vault", "payer"),
        ("quickpay:qp_1:return:9", "vault", "payer"),
        ("quickpay:qp_1:refund:9", "vault", "payer"),
        ("quickpay:qp_1:payout", "vault", "recipient"),
        ("refund:re_1:delivery", "vault", "payer"),  # a merchant's refund reaches its payer
        ("refund:rtu_1:return:4", "vault", "payer"),
        ("x402:5d1e:settle", "vault", "payer"),  # the payer's tokens move
        ("chains:deploy-factory:31337", "deployer", "operator"),
    ],
)
def test_whom_an_outbox_transaction_pays_is_read_from_its_key(key, signer, outsider):
    from chains.keys import key_columns
    from ledger.observed import order_of

    columns = key_columns(key, signer)
    assert columns["funds"] == outsider
    assert columns["owner"] == ":".join(key.split(":")[:2])
    assert (order_of(columns["owner"]) is not None) == key.startswith("order:")
