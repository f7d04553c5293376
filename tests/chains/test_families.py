"""The chain-family seam (chains.families): every family the model names is implemented, a chain's family is
its row's (EVM unless it says otherwise), and the watcher's scans, the outbox's sends and the payments'
deposit addresses go through it."""

import pytest

from chains import evm
from chains.families import FAMILIES, deposit_address, family_of
from chains.families.base import ChainFamily
from chains.families.evm import EVM
from chains.models import Chain as ChainRow
from chains.registry import ChainError, chain_from_entry, chains, registry_forget
from chains.tasks import outbox_poll, outbox_receipts, outbox_send_task, scan_chain_deposits
from tests.factories import OutboxTxFactory

pytestmark = pytest.mark.django_db


def test_every_family_the_model_names_is_implemented():
    assert set(FAMILIES) == set(ChainRow.Family.values)
    for name, family in FAMILIES.items():
        assert isinstance(family, ChainFamily) and family.name == name


def test_a_chain_is_evm_unless_its_row_says_otherwise():
    row = ChainRow.objects.create(chain_id=777001, name="Plain", native_symbol="ETH")
    row.refresh_from_db()
    registry_forget()
    assert row.family == ChainRow.Family.EVM and family_of(777001) is EVM
    assert family_of(999_999_999) is EVM  # a chain the registry does not know: nothing says otherwise


def test_an_entry_naming_a_family_the_service_does_not_speak_is_refused():
    entry = {"chain_id": 777002, "name": "Other", "native_symbol": "SOL"}
    assert chain_from_entry(entry).family == "evm"
    with pytest.raises(ChainError, match="family must be one of: evm"):
        chain_from_entry({**entry, "family": "svm"})


def test_the_evm_family_knows_its_addresses():
    lower = "0x" + "ab" * 20
    assert EVM.is_address(lower) and EVM.normalise(lower) == evm.to_checksum_address(lower) != lower
    for bad in ("0x" + "ab" * 19, "ab" * 20, b"\xab" * 20, None, "0x" + "zz" * 20):
        assert not EVM.is_address(bad)
    with pytest.raises(ValueError):
        EVM.normalise("0x1234")


class StandIn:
    """A family of its own, as a new one would be: it records what the service asks of it."""

    name = "evm"
    address_pattern = evm.ADDRESS_PATTERN

    def __init__(self):
        self.asked = []

    def is_address(self, value):
        return evm.is_address(value)

    def normalise(self, address):
        return address.lower()

    def deposit_address(self, chain, *, kind, identifier):
        self.asked.append(("deposit_address", chain.chain_id, kind, identifier))
        return "0x" + "11" * 20

    def scan(self, chain_id):
        self.asked.append(("scan", chain_id))

    def send(self, tx):
        self.asked.append(("send", tx.key))

    def check(self, tx, counts=None):
        self.asked.append(("check", tx.key))

    def poll(self, *, skip_chains):
        self.asked.append(("poll", sorted(skip_chains)))
        return 2

    def receipts(self, *, skip_chains):
        self.asked.append(("receipts", sorted(skip_chains)))
        return 1


def test_scans_sends_and_deposit_addresses_go_through_the_chains_family(monkeypatch, devnets_registry):
    stand_in = StandIn()
    assert isinstance(stand_in, ChainFamily)
    monkeypatch.setitem(FAMILIES, "evm", stand_in)
    tx = OutboxTxFactory(chain_id=31337)

    scan_chain_deposits(31337)
    outbox_send_task(tx.pk)
    address = deposit_address(chain_id=31337, kind="order", identifier="abc", field="srcChain")

    assert address == "0x" + "11" * 20
    assert stand_in.asked == [("scan", 31337), ("send", tx.key), ("deposit_address", 31337, "order", "abc")]


def test_the_outbox_passes_go_to_each_family_with_the_chains_of_the_others_left_out(
    monkeypatch, devnets_registry
):
    ours, theirs = StandIn(), StandIn()
    monkeypatch.setitem(FAMILIES, "evm", ours)
    monkeypatch.setitem(FAMILIES, "other", theirs)
    ChainRow.objects.create(chain_id=777003, name="Elsewhere", native_symbol="OTH", family="other")
    registry_forget()
    evm_chains = sorted(chain.chain_id for chain in chains() if chain.family == "evm")
    assert 31337 in evm_chains and 777003 not in evm_chains

    assert outbox_poll() == 4 and outbox_receipts() == 2
    assert ours.asked == [("poll", [777003]), ("receipts", [777003])]
    assert theirs.asked == [("poll", evm_chains), ("receipts", evm_chains)]
