"""A refund's money, through the transaction outbox by business key (as quick payments do):

- a refund funded by deposit: the factory sweeps its address into the vault (`refund:<id>:sweep`; a deposit
  of another token, `refund:<id>:sweep:<deposit>`), then the vault delivers the amount to the payer
  (`refund:<id>:delivery`);
- a refund funded from the refund balance: the amount is in the vault already; the vault delivers it;
- to another chain or token, the vault pays an order of the orders app instead (`refund:<id>:order`), which
  delivers it as it does every payer's (refunds.crosschain);
- what did not count toward the funding (another token, beyond the amount, after it was funded or canceled)
  goes back to its sender (`refund:<id>:return:<deposit>`), and so does what did count toward a refund
  canceled before it was funded in full (`refund:<id>:unfunded:<deposit>`).

Each key always stands for the same amount, so running this again, or concurrently, pays nothing twice. Runs
when a deposit is handled, when one of its transactions finishes, when it is canceled, and from the minute's
resume of refunds in flight.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from chains.incidents import incident_open_for, incident_record
from chains.keys import OwnerKind, Signer, Step, outbox_key
from chains.models import Deposit, Incident, OutboxTx
from chains.outbox import outbox_sweep, outbox_transfer, sweep_covers
from core.errors import InvalidRequest
from refunds.crosschain import crosses, order_funding, refund_order
from refunds.models import Refund, RefundDeposit
from refunds.services import REFUND_OWNER, refund_delivery_failed

MINED = OutboxTx.Status.MINED
Status = Refund.Status


def _sweep(refund: Refund, token: str, key: str) -> OutboxTx:
    return outbox_sweep(
        key=key, chain_id=refund.chain_id, kind=REFUND_OWNER, identifier=refund.id, token=token
    )


def _pay(refund: Refund, *, chain_id: int, token: str, to: str, amount: int, key: str) -> OutboxTx:
    return outbox_transfer(key=key, chain_id=chain_id, signer=Signer.VAULT, token=token, to=to, amount=amount)


def refund_settle(refund_id: str) -> dict[str, str]:
    """Ask for every transaction the refund needs now; {business key: status} of those asked for."""
    refund = Refund.objects.filter(pk=refund_id).first()
    if refund is None:
        return {}
    deposits = list(RefundDeposit.objects.filter(refund=refund).select_related("deposit"))
    if any(d.deposit.status == Deposit.Status.ORPHANED for d in deposits) or incident_open_for(refund.owner):
        return {}  # a deposit in doubt after a reorg, or staff looking: nothing moves
    sent: dict[str, str] = {}
    counted = sum(int(d.counted) for d in deposits)
    main_sweep = None
    if counted and refund.status != Status.REQUIRES_FUNDING:
        main_sweep = _sweep(refund, refund.token_address, outbox_key(OwnerKind.REFUND, refund.id, Step.SWEEP))
        sent[main_sweep.key] = main_sweep.status
        if main_sweep.status == MINED and not sweep_covers(
            main_sweep, counted=counted, subject=refund.owner, what=f"refund {refund.id} ({refund.status})"
        ):
            return sent
    funded = refund.funding_method == Refund.Funding.BALANCE or (
        main_sweep is not None and main_sweep.status == MINED and counted >= int(refund.amount)
    )
    if funded and refund.status == Status.PENDING:
        if crosses(refund):  # another chain or token: an order delivers it (refunds.crosschain)
            try:
                order = refund_order(refund)
            except (
                InvalidRequest
            ) as exc:  # no route now (the provider refuses it): the amount stays the merchant's
                refund_delivery_failed(refund.id, reason=f"no quote to deliver it: {exc.message}")
                return sent
            tx = order_funding(refund, order)
        else:
            tx = _pay(
                refund,
                chain_id=refund.chain_id,
                token=refund.token_address,
                to=refund.destination_address,
                amount=int(refund.amount),
                key=outbox_key(OwnerKind.REFUND, refund.id, Step.DELIVERY),
            )
        sent[tx.key] = tx.status
    for item in deposits:
        deposit = item.deposit
        owed = [(int(item.returned), outbox_key(OwnerKind.REFUND, refund.id, Step.RETURN, deposit.pk))]
        if refund.status == Status.CANCELED:
            owed.append(
                (int(item.counted), outbox_key(OwnerKind.REFUND, refund.id, Step.UNFUNDED, deposit.pk))
            )
        owed = [(amount, key) for amount, key in owed if amount > 0]
        if not owed:
            continue
        if int(item.counted):  # its token's balance is swept with the refund's funding
            if main_sweep is None:
                continue  # still awaiting funding: the part beyond the amount goes back once it is settled
            source = main_sweep
        else:
            source = _sweep(
                refund, deposit.token, outbox_key(OwnerKind.REFUND, refund.id, Step.SWEEP, deposit.pk)
            )
            sent[source.key] = source.status
        if source.status != MINED:
            continue
        if (
            not deposit.from_address
        ):  # seen by balance (a contract's internal payment): nobody to return it to
            incident_record(
                kind=Incident.Kind.UNATTRIBUTED,
                subject=f"refund-deposit:{deposit.pk}",
                chain_id=deposit.chain_id,
                summary=f"refund {refund.id}: {sum(a for a, _ in owed)} of {deposit.token} must go back, but its "
                "sender is unknown (a contract's internal payment): held in the vault for staff",
                details={"refund": refund.id, "deposit": deposit.pk},
            )
            continue
        for amount, key in owed:
            tx = _pay(
                refund,
                chain_id=deposit.chain_id,
                token=deposit.token,
                to=deposit.from_address,
                amount=amount,
                key=key,
            )
            sent[tx.key] = tx.status
    return sent


def refunds_settling(*, limit: int = 1000) -> list[str]:
    """Refunds of the last two days whose money may still have to move: funded and not yet delivered, canceled
    or finished with deposits to send back. What a lost settlement task leaves waiting is found here."""
    since = timezone.now() - timedelta(days=2)
    pending = Refund.objects.filter(status=Status.PENDING, created_at__gte=since)
    with_deposits = Refund.objects.filter(created_at__gte=since, deposits__isnull=False).exclude(
        status=Status.REQUIRES_FUNDING
    )
    ids = set(pending.values_list("pk", flat=True)[:limit]) | set(
        with_deposits.distinct().values_list("pk", flat=True)[:limit]
    )
    return sorted(ids)
