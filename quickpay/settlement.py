"""A quick payment's money: the amount to its recipient, everything else back to its sender.

Through the transaction outbox (chains/outbox.py), by business key, as orders
do: the factory sweeps the payment's deposit address into the vault
(`quickpay:<id>:sweep` for its token; `quickpay:<id>:sweep:<deposit>` for a
deposit of another token), then the vault pays the recipient the amount once
the payment is paid (`quickpay:<id>:payout`) and each sender what did not
count (`quickpay:<id>:refund:<deposit>`: another token, a late deposit, the
part beyond the amount), and, when the payment expired before it was paid,
what did count (`quickpay:<id>:return:<deposit>`). Each key always stands for
the same amount, so running this again, or concurrently, pays nothing twice.
Runs when a deposit is handled, when one of its transactions finishes, and
when an unpaid payment that received something expires.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.utils import timezone

from chains.incidents import incident_open_for, incident_record
from chains.keys import OwnerKind, Signer, Step, outbox_key
from chains.models import Deposit, Incident, OutboxTx
from chains.outbox import outbox_sweep, outbox_transfer, sweep_covers
from quickpay.models import QuickPayment, QuickPaymentDeposit
from quickpay.services import QUICK_PAYMENT_OWNER

logger = logging.getLogger(__name__)
MINED = OutboxTx.Status.MINED


def _sweep(payment: QuickPayment, token: str, key: str) -> OutboxTx:
    return outbox_sweep(
        key=key, chain_id=payment.chain_id, kind=QUICK_PAYMENT_OWNER, identifier=payment.id, token=token
    )


def _pay(payment: QuickPayment, *, token: str, to: str, amount: int, key: str) -> OutboxTx:
    return outbox_transfer(
        key=key, chain_id=payment.chain_id, signer=Signer.VAULT, token=token, to=to, amount=amount
    )


def _held(payment: QuickPayment, deposits: list[QuickPaymentDeposit]) -> bool:
    """A deposit in doubt after a reorg, or an open incident about the payment: nothing moves."""
    return any(d.deposit.status == Deposit.Status.ORPHANED for d in deposits) or incident_open_for(
        f"{QUICK_PAYMENT_OWNER}:{payment.id}"
    )


def quick_payment_settle(payment_id: str) -> dict[str, str]:
    """Ask for every transaction the payment needs now; {business key: status} of those asked for."""
    payment = QuickPayment.objects.filter(pk=payment_id).first()
    if payment is None:
        return {}
    sent: dict[str, str] = {}
    deposits = list(QuickPaymentDeposit.objects.filter(payment=payment).select_related("deposit"))
    if _held(payment, deposits):
        return {}
    counted = sum(int(d.counted) for d in deposits)
    main_sweep = None
    if counted and payment.status != QuickPayment.Status.AWAITING_PAYMENT:
        main_sweep = _sweep(
            payment, payment.token_address, outbox_key(OwnerKind.QUICKPAY, payment.id, Step.SWEEP)
        )
        sent[main_sweep.key] = main_sweep.status
        subject = f"{QUICK_PAYMENT_OWNER}:{payment.id}"
        if main_sweep.status == MINED and not sweep_covers(
            main_sweep,
            counted=counted,
            subject=subject,
            what=f"quick payment {payment.id} ({payment.status})",
        ):
            return sent
    if main_sweep is not None and main_sweep.status == MINED and payment.status == QuickPayment.Status.PAID:
        tx = _pay(
            payment,
            token=payment.token_address,
            to=payment.recipient_address,
            amount=int(payment.amount),
            key=outbox_key(OwnerKind.QUICKPAY, payment.id, Step.PAYOUT),
        )
        sent[tx.key] = tx.status
    for item in deposits:
        deposit = item.deposit
        owed = [(int(item.refund), outbox_key(OwnerKind.QUICKPAY, payment.id, Step.REFUND, deposit.pk))]
        if payment.status == QuickPayment.Status.EXPIRED:
            owed.append(
                (int(item.counted), outbox_key(OwnerKind.QUICKPAY, payment.id, Step.RETURN, deposit.pk))
            )
        owed = [(amount, key) for amount, key in owed if amount > 0]
        if not owed:
            continue
        if int(item.counted):  # its token's balance is swept with the payment's
            if main_sweep is None:
                continue  # still awaiting payment: the part beyond the amount goes back once it is settled
            source = main_sweep
        else:
            source = _sweep(
                payment, deposit.token, outbox_key(OwnerKind.QUICKPAY, payment.id, Step.SWEEP, deposit.pk)
            )
            sent[source.key] = source.status
        if source.status != MINED:
            continue
        if (
            not deposit.from_address
        ):  # seen by balance (a contract's internal payment): no sender to return it to
            incident_record(
                kind=Incident.Kind.UNATTRIBUTED,
                subject=f"quickpay-deposit:{deposit.pk}",
                chain_id=deposit.chain_id,
                summary=f"quick payment {payment.id}: {sum(a for a, _ in owed)} of {deposit.token} must go back, "
                "but its sender is unknown (a contract's internal payment): held in the vault for staff",
                details={"quick_payment": payment.id, "deposit": deposit.pk},
            )
            continue
        for amount, key in owed:
            tx = _pay(payment, token=deposit.token, to=deposit.from_address, amount=amount, key=key)
            sent[tx.key] = tx.status
    return sent


def quick_payments_settling(*, limit: int = 1000) -> list[str]:
    """Quick payments that received something in the last day and whose payout or returns are not all mined
    yet: what a lost settlement task would leave waiting (the outbox drives the rest)."""
    since = timezone.now() - timedelta(days=1)
    recent = (
        QuickPayment.objects.filter(deposits__isnull=False, created_at__gte=since)
        .exclude(status=QuickPayment.Status.AWAITING_PAYMENT)
        .distinct()
        .values_list("pk", flat=True)[:limit]
    )
    done = set(
        OutboxTx.objects.filter(
            key__in=[outbox_key(OwnerKind.QUICKPAY, pk, Step.PAYOUT) for pk in recent], status=MINED
        ).values_list("key", flat=True)
    )
    return [pk for pk in recent if outbox_key(OwnerKind.QUICKPAY, pk, Step.PAYOUT) not in done]
