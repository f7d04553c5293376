"""One collection kernel for every payment collected at a deposit address: what was counted is swept into the
vault once, what was not (another token, beyond the amount, late, or counted toward something that will not
happen) goes back to its sender, each through the outbox under its business key, with one incident path.

Each kind of payment (quick payments, refund funding, refund balance top-ups) keeps only its own rules: what
counts, when it is funded, where its payout goes. It describes its address (`DepositAddress`) and what each
deposit owes back (`GoingBack`), and calls:

- `sweep_counted`: the sweep of the counted token, once, and whether it came up short (mined, moving less than
  was counted: a `sweep_short` incident about the owner holds it);
- `send_back`: for each deposit that owes something back, its sweep (the counted sweep for the counted token,
  its own for any other), then, once that sweep is mined, the transfers back to its sender; a deposit whose
  sender is unknown (seen by balance: a contract's internal payment) opens an `unattributed` incident
  (`hold_unattributed`) and stays in the vault for staff;
- `attempt`: a transfer back that failed (it moved nothing) is asked for again under its next attempt's key
  (`…:attempt2`), a while later and a bounded number of times, then waits for staff.

An order's refunds (orders/refunds.py) use the same attempts and incident path, with the order's own rules:
a card payment goes back through its vendor, and staff may enter the address of a sender the chain did not
name.

Every transaction is asked of the outbox by a key that always stands for the same amount, so a settlement run
again, or by two workers at once, pays nothing twice; the sweep before a return is the rule that nothing goes
back before it arrived in the vault.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from chains.incidents import incident_open_for, incident_record
from chains.keys import OwnerKind, Signer, Step, extended, outbox_key
from chains.models import Deposit, Incident, OutboxTx
from chains.outbox import outbox_sweep, outbox_transfer, sweep_covers

MINED = OutboxTx.Status.MINED


@dataclass(frozen=True)
class DepositAddress:
    """Whose deposit address it is and how its transactions and incidents name the owner."""

    owner: OwnerKind  # the kind its business keys are written under
    identifier: str
    chain_id: int
    salt_kind: str  # the kind its CREATE2 salt was derived with (the address depends on it: never renamed)
    subject: str  # the incidents about the owner, which hold its settlement while open
    label: str  # the owner in an incident's words: "quick payment qp_1"

    def sweep(self, token: str, *detail: object, step: Step = Step.SWEEP) -> OutboxTx:
        """The factory moves what the address holds of `token` into the vault, under the owner's `step` key."""
        return outbox_sweep(
            key=outbox_key(self.owner, self.identifier, step, *detail),
            chain_id=self.chain_id,
            kind=self.salt_kind,
            identifier=self.identifier,
            token=token,
        )

    def held(self, deposits: Iterable[Deposit]) -> bool:
        """A deposit in doubt after a reorg, or an open incident about the owner (staff looking): nothing
        moves."""
        return any(deposit.status == Deposit.Status.ORPHANED for deposit in deposits) or incident_open_for(
            self.subject
        )

    def owes(self, deposit: Deposit, *amounts: tuple[int, Step], with_counted: bool = False) -> GoingBack:
        """What `deposit` owes its sender: each amount under the owner's `step` key for that deposit."""
        return GoingBack(
            deposit=deposit,
            amounts=[
                (amount, outbox_key(self.owner, self.identifier, step, deposit.pk))
                for amount, step in amounts
            ],
            with_counted=with_counted,
        )


@dataclass
class GoingBack:
    """What one deposit owes its sender now: (amount, business key) pairs; `with_counted` when its token's balance
    goes into the vault with the counted sweep (else it has a sweep of its own)."""

    deposit: Deposit
    amounts: list[tuple[int, str]] = field(default_factory=list)
    with_counted: bool = False


def sweep_counted(
    address: DepositAddress, token: str, counted: int, sent: dict[str, str]
) -> tuple[OutboxTx, bool]:
    """The sweep of the counted `token` (asked for once), and whether it came up short: mined, it moved less than
    `counted`. A short sweep tells staff (an incident about the owner, which holds it): nothing is paid out or
    sent back for it, since the vault did not get it."""
    sweep = address.sweep(token)
    sent[sweep.key] = sweep.status
    short = sweep.status == MINED and not sweep_covers(
        sweep, counted=counted, subject=address.subject, what=address.label
    )
    return sweep, short


def send_back(
    address: DepositAddress,
    going: list[GoingBack],
    counted_sweep: OutboxTx | None,
    sent: dict[str, str],
    *,
    own_sweep: Step = Step.SWEEP,
) -> None:
    """Every deposit's amounts back to its sender, each once its sweep is mined. A deposit of the counted token
    waits for the counted sweep (None: not asked for yet, the owner still collecting); any other has its own
    sweep, under `own_sweep` and the deposit's id."""
    for item in going:
        amounts = [(amount, key) for amount, key in item.amounts if amount > 0]
        if not amounts:
            continue
        deposit = item.deposit
        if item.with_counted:
            if counted_sweep is None:
                continue
            source = counted_sweep
        else:
            source = address.sweep(deposit.token, deposit.pk, step=own_sweep)
            sent[source.key] = source.status
        if source.status != MINED:
            continue
        if not deposit.from_address:
            hold_unattributed(
                address, deposit.pk, deposit.chain_id, deposit.token, sum(amount for amount, _ in amounts)
            )
            continue
        for amount, key in amounts:
            back = transfer_back(
                chain_id=deposit.chain_id, token=deposit.token, to=deposit.from_address, amount=amount
            )
            tx = attempt(key, back)
            sent[tx.key] = tx.status


def transfer_back(*, chain_id: int, token: str, to: str, amount: int) -> Callable[[str], OutboxTx]:
    """How to ask for one transfer back from the vault under a key (what `attempt` asks with)."""

    def ask(key: str) -> OutboxTx:
        return outbox_transfer(
            key=key, chain_id=chain_id, signer=Signer.VAULT, token=token, to=to, amount=amount
        )

    return ask


def attempt(key: str, ask: Callable[[str], OutboxTx]) -> OutboxTx:
    """The latest attempt of the transfer back under `key`, asked for (`ask(key)`) if none is under way.

    A failed attempt moved nothing (it reverted, or would have and was never sent: the vault short of funds a
    relay has not returned yet, say), so REFUND_RETRY_SECONDS after it finished it is asked for again under
    the next attempt's key (`key:attempt2`, ...), at most REFUND_MAX_ATTEMPTS times in all; then the last
    failure stands and waits for staff. Each attempt's key stands for the same amount, so nothing is paid
    twice: a new attempt is asked for only once the latest one failed.
    """
    limit = settings.REFUND_MAX_ATTEMPTS
    attempts = list(OutboxTx.objects.filter(key__in=attempt_keys(key)).order_by("created_at"))  # unique index
    if attempts:
        latest = attempts[-1]
        if latest.status != OutboxTx.Status.FAILED or len(attempts) >= limit:
            return latest
        retry_after = timezone.now() - timedelta(seconds=settings.REFUND_RETRY_SECONDS)
        if latest.finished_at and latest.finished_at > retry_after:
            return latest
        key = extended(key, f"attempt{len(attempts) + 1}")
    return ask(key)


def attempt_keys(key: str) -> list[str]:
    """The keys every attempt of the transfer under `key` may have: `key`, `key:attempt2`, ..."""
    return [key, *(extended(key, f"attempt{n}") for n in range(2, settings.REFUND_MAX_ATTEMPTS + 1))]


def all_mined(keys: Iterable[str]) -> bool:
    """Whether each transfer back under these keys has a mined attempt (one indexed query)."""
    wanted = list(keys)
    attempts = {attempt: key for key in wanted for attempt in attempt_keys(key)}
    mined = OutboxTx.objects.filter(key__in=list(attempts), status=MINED).values_list("key", flat=True)
    return {attempts[attempt] for attempt in mined} == set(wanted)


def unattributed_subject(owner: OwnerKind, deposit_id: object) -> str:
    """The subject of the incident about one deposit of `owner`'s held for want of a sender."""
    return f"{owner}-deposit:{deposit_id}"


def hold_unattributed(
    address: DepositAddress,
    deposit_id: object,
    chain_id: int,
    token: str,
    amount: int,
    *,
    why: str = "its sender is unknown (a contract's internal payment)",
    remedy: str = "held in the vault for staff",
) -> None:
    """Money to send back with nobody to send it to: held in the vault, staff told once per deposit."""
    incident_record(
        kind=Incident.Kind.UNATTRIBUTED,
        subject=unattributed_subject(address.owner, deposit_id),
        chain_id=chain_id,
        summary=f"{address.label}: {amount} of {token} must go back, but {why}: {remedy}",
        details={"owner": address.subject, "deposit": deposit_id, "amount": str(amount)},
    )
