"""Whether an address may be paid: a recipient, a refund's destination, a withdrawal's address. Some addresses
take a transfer and keep it for ever, and a form that accepted them loses the money: the zero address, a
token's own contract (the probe's refund to the token contract was lost), and the service's own addresses
(its signers, a chain's deposit factory, a deposit address: money sent there is the service's to sort out,
not the payee's)."""

from __future__ import annotations

from chains.evm import ZERO_ADDRESS, is_address, to_checksum_address
from chains.models import Token, WatchedAddress
from chains.registry import chain_get, chains
from chains.signers import ROLES, signer_address


def payee_refusal(address: str) -> str | None:
    """Why `address` may not be paid (a sentence to follow the field's name), or None when it may."""
    if not is_address(address):
        return "must be 0x followed by 40 hexadecimal characters."
    lowered = address.lower()
    if lowered == ZERO_ADDRESS:
        return "is the zero address: what is sent there is lost."
    own = {(signer_address(role) or "").lower() for role in ROLES}
    own |= {chain.factory_address.lower() for chain in chains() if chain.factory_address}
    if lowered in own:
        return "is one of this service's own addresses, not the payee's."
    checksummed, chain_ids = to_checksum_address(address), [chain.chain_id for chain in chains()]
    # Each by its (chain, address) index: the chains the registry knows, and the address as stored.
    if Token.objects.filter(chain_id__in=chain_ids, address=checksummed).exists():
        return "is a token's contract, not a wallet: what is sent there is lost."
    if WatchedAddress.objects.filter(chain_id__in=chain_ids, address=checksummed).exists():
        return "is a deposit address of this service, not the payee's."
    return None


def payout_chain_refusal(chain_id: int) -> str | None:
    """Why the service cannot pay a merchant on `chain_id` (a sentence to follow the field's name), or None.

    Delivering there (from the solver's inventory, through the relay provider, or the vault's payout) needs the
    service's own contracts on that chain, as taking a payment there does: a chain the registry names no
    deposit factory for is one the service does not operate on, and a payment to it would only come back."""
    chain = chain_get(chain_id)
    if chain is None:
        return f"chain {chain_id} is not a chain this service knows."
    if not chain.accepts_payments:
        return (
            f"the service does not operate on {chain.name} ({chain_id}) yet (no deposit factory there): "
            "payments to it could not be delivered. Choose a chain it operates on."
        )
    return None
