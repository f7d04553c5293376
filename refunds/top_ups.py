"""Top-ups of a refund balance: a deposit address per top-up (`refund:<rtu_id>`), its deposits counted,
swept into the vault and credited to the balance once the sweep that took them is mined.

Sweeps are numbered (`refund:<id>:sweep:<n>`): each is asked, one at a time, for the deposits counted and not
yet covered by an earlier one. A sweep moves everything the address holds of the token, so one may take a
deposit confirmed after it was asked; the check is therefore cumulative: what all mined sweeps moved covers
what they were asked for, or staff are told (an incident) and nothing more is credited. A deposit of another
token, or one that arrives after the top-up expired, goes back to its sender (`refund:<id>:return:<deposit>`).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chains.collection import DepositAddress, send_back
from chains.families import deposit_address
from chains.incidents import incident_record
from chains.keys import OwnerKind, Step, outbox_key, owner_of
from chains.models import Deposit, Incident, OutboxTx
from chains.outbox import swept_amount
from chains.tokens import token_get
from chains.watcher import watch_address
from core.errors import InvalidRequest
from ledger.balance import RefundBalanceToppedUp, balance_refund_topped_up
from platform_api.models import Organization
from refunds.common import REFUND_OWNER, refund_balance_credit
from refunds.models import RefundTopUp, RefundTopUpDeposit, new_top_up_id

MINED = OutboxTx.Status.MINED


@transaction.atomic
def top_up_create(*, organization: Organization, chain_id: int, token_address: str) -> RefundTopUp:
    token = token_get(chain_id=chain_id, address=token_address)
    if token is None:
        raise InvalidRequest(
            f"{token_address} is not a token this service knows on chain {chain_id}.", field="token_address"
        )
    top_up_id, now = new_top_up_id(), timezone.now()
    address = deposit_address(chain_id=chain_id, kind=REFUND_OWNER, identifier=top_up_id, field="chain_id")
    top_up = RefundTopUp.objects.create(
        id=top_up_id,
        organization=organization,
        chain_id=chain_id,
        token_address=token.address,
        deposit_address=address,
        expires_at=now + timedelta(seconds=settings.REFUND_FUNDING_SECONDS),
        created_at=now,
    )
    watch_address(
        chain_id=chain_id,
        address=address,
        owner=top_up.owner,
        watch_until=top_up.expires_at + timedelta(days=1),
    )
    return top_up


def top_up_record_deposit(deposit: Deposit, top_up_id: str) -> None:
    """Count a confirmed deposit (the handler's transaction, once per deposit)."""
    top_up = RefundTopUp.objects.select_for_update().filter(pk=top_up_id).first()
    if top_up is None or RefundTopUpDeposit.objects.filter(deposit_id=deposit.pk).exists():
        return
    amount = int(deposit.amount)
    counts = deposit.token.lower() == top_up.token_address.lower() and deposit.created_at <= top_up.expires_at
    RefundTopUpDeposit.objects.create(
        top_up=top_up, deposit=deposit, counted=amount if counts else 0, returned=0 if counts else amount
    )


@transaction.atomic
def top_up_withdraw_deposit(top_up_id: str, deposit_id: int) -> None:
    """A reorg took a deposit off the chain for good: uncounted while nothing moved for it, else an incident."""
    item = (
        RefundTopUpDeposit.objects.select_for_update()
        .filter(top_up_id=top_up_id, deposit_id=deposit_id)
        .first()
    )
    if item is None or not (int(item.counted) or int(item.returned)):
        return
    if (
        item.sweep is None
        and not OutboxTx.objects.filter(
            key=outbox_key(OwnerKind.REFUND, top_up_id, Step.RETURN, deposit_id)
        ).exists()
    ):
        RefundTopUpDeposit.objects.filter(pk=item.pk).update(counted=0, returned=0)
        return
    incident_record(
        kind=Incident.Kind.DEPOSIT_REORGED,
        subject=owner_of(OwnerKind.REFUND, top_up_id),
        chain_id=item.deposit.chain_id,
        summary=f"refund balance top-up {top_up_id}: a deposit it swept or was returning was taken off the chain "
        "by a reorg; nothing more is credited or sent for it until staff resolve this",
        details={"deposit": deposit_id},
    )


def top_up_settle(top_up_id: str) -> dict[str, str]:
    """Ask for the next sweep, credit what mined sweeps took, send back what does not count."""
    sent: dict[str, str] = {}
    with transaction.atomic():
        top_up = RefundTopUp.objects.select_for_update().filter(pk=top_up_id).first()
        if top_up is None:
            return {}
        items = list(RefundTopUpDeposit.objects.filter(top_up=top_up).select_related("deposit"))
        if _address(top_up).held(i.deposit for i in items):
            return {}
        _credit_mined_sweeps(top_up, items)
        last = OutboxTx.objects.filter(
            key=outbox_key(OwnerKind.REFUND, top_up.id, Step.SWEEP, top_up.sweeps)
        ).first()
        uncovered = [i for i in items if int(i.counted) and i.sweep is None]
        if uncovered and (top_up.sweeps == 0 or (last is not None and not last.in_flight)):
            top_up.sweeps += 1
            RefundTopUp.objects.filter(pk=top_up.pk).update(sweeps=top_up.sweeps)
            RefundTopUpDeposit.objects.filter(pk__in=[i.pk for i in uncovered]).update(sweep=top_up.sweeps)
            tx = _address(top_up).sweep(top_up.token_address, top_up.sweeps)
            sent[tx.key] = tx.status
    address = _address(top_up)
    going = [address.owes(item.deposit, (int(item.returned), Step.RETURN)) for item in items]
    send_back(address, going, None, sent, own_sweep=Step.SWEEP_RETURN)
    return sent


def _address(top_up: RefundTopUp) -> DepositAddress:
    return DepositAddress(
        owner=OwnerKind.REFUND,
        identifier=top_up.id,
        chain_id=top_up.chain_id,
        salt_kind=REFUND_OWNER,
        subject=top_up.owner,
        label=f"refund balance top-up {top_up.id}",
    )


def _credit_mined_sweeps(top_up: RefundTopUp, items: list[RefundTopUpDeposit]) -> None:
    """Credit the deposits whose sweep is mined, if what every mined sweep moved covers what they were asked
    for (under the top-up's lock: once)."""
    keys = {outbox_key(OwnerKind.REFUND, top_up.id, Step.SWEEP, n): n for n in range(1, top_up.sweeps + 1)}
    sweeps = {keys[tx.key]: tx for tx in OutboxTx.objects.filter(key__in=keys)}
    mined = {n for n, tx in sweeps.items() if tx.status == MINED}
    for n, tx in sweeps.items():
        if tx.status == OutboxTx.Status.FAILED:  # asked again under the next number
            RefundTopUpDeposit.objects.filter(top_up=top_up, sweep=n, credited_at__isnull=True).update(
                sweep=None
            )
    due = [i for i in items if i.sweep in mined and i.credited_at is None and int(i.counted)]
    if not due:
        return
    moved = sum(swept_amount(sweeps[n]) or 0 for n in mined)
    asked = sum(int(i.counted) for i in items if i.sweep in mined)
    if moved < asked:
        incident_record(
            kind=Incident.Kind.SWEEP_SHORT,
            subject=top_up.owner,
            chain_id=top_up.chain_id,
            summary=f"refund balance top-up {top_up.id}: its sweeps moved {moved} of the {asked} its deposits "
            "brought; nothing more is credited until staff resolve this",
            details={"moved": str(moved), "asked": str(asked)},
        )
        return
    amount = sum(int(i.counted) for i in due)
    now = timezone.now()
    RefundTopUpDeposit.objects.filter(pk__in=[i.pk for i in due]).update(credited_at=now)
    credited = int(top_up.credited) + amount
    RefundTopUp.objects.filter(pk=top_up.pk).update(credited=credited)
    refund_balance_credit(
        organization_id=top_up.organization_id,
        chain_id=top_up.chain_id,
        token_address=top_up.token_address,
        amount=amount,
    )
    for item in due:
        balance_refund_topped_up(
            RefundBalanceToppedUp(
                organization_id=top_up.organization_id,
                top_up_id=top_up.id,
                deposit_id=item.deposit_id,
                chain_id=top_up.chain_id,
                token_address=top_up.token_address,
                amount=int(item.counted),
                tx_hashes=[
                    ("deposit", top_up.chain_id, item.deposit.tx_hash),
                    ("sweep", top_up.chain_id, sweeps[item.sweep or 0].tx_hash),
                ],
            )
        )


def top_ups_settling(*, limit: int = 1000) -> list[str]:
    """Top-ups of the last two days with deposits not yet credited or returned."""
    since = timezone.now() - timedelta(days=2)
    rows = RefundTopUpDeposit.objects.filter(deposit__created_at__gte=since).filter(credited_at__isnull=True)
    counted = rows.exclude(counted=0).values_list("top_up_id", flat=True)
    returning = rows.exclude(returned=0).values_list("top_up_id", flat=True)
    return sorted(set(counted[:limit]) | set(returning[:limit]))
