"""The EVM family: 20-byte hex addresses in their EIP-55 form, CREATE2 deposit addresses under the chain's
deposit factory (chains.evm), the log-scanning watcher (chains.watcher), and the outbox's EIP-1559
transactions, signed once under a nonce lock and finished by their receipts (chains.outbox)."""

from __future__ import annotations

from collections.abc import Collection

from chains import evm
from chains.models import Chain as ChainRow
from chains.models import OutboxTx
from chains.outbox.poll import outbox_check, outbox_check_receipts, outbox_poll
from chains.outbox.receipts import SenderCounts
from chains.outbox.send import outbox_send_row
from chains.registry import Chain
from chains.watcher import ScanResult, scan_chain


class Evm:
    name = ChainRow.Family.EVM.value
    address_pattern = evm.ADDRESS_PATTERN

    def is_address(self, value: object) -> bool:
        return evm.is_address(value)

    def normalise(self, address: str) -> str:
        return evm.to_checksum_address(address)

    def deposit_address(self, chain: Chain, *, kind: str, identifier: str) -> str:
        return evm.deposit_address_for(factory=chain.factory_address, kind=kind, identifier=identifier)

    def scan(self, chain_id: int) -> ScanResult | None:
        return scan_chain(chain_id)

    def send(self, tx: OutboxTx) -> None:
        outbox_send_row(tx)

    def check(self, tx: OutboxTx, counts: SenderCounts | None = None) -> None:
        outbox_check(tx, counts)

    def poll(self, *, skip_chains: Collection[int]) -> int:
        return outbox_poll(skip_chains=skip_chains)

    def receipts(self, *, skip_chains: Collection[int]) -> int:
        return outbox_check_receipts(skip_chains=skip_chains)


EVM = Evm()
