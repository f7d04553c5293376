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

from chains.collection import DepositAddress, send_back, sweep_counted
from chains.keys import OwnerKind, Signer, Step, outbox_key
from chains.models import OutboxTx
from chains.outbox import outbox_transfer
from quickpay.models import QuickPayment, QuickPaymentDeposit
from quickpay.services import QUICK_PAYMENT_OWNER

logger = logging.getLogger(__name__)
MINED = OutboxTx.Status.MINED


def _address(payment: QuickPayment) -> DepositAddress:
    return DepositAddress(
        owner=OwnerKind.QUICKPAY,
        identifier=payment.id,
        chain_id=payment.chain_id,
        salt_kind=QUICK_PAYMENT_OWNER,
        subject=f"{QUICK_PAYMENT_OWNER}:{payment.id}",
        label=f"quick payment {payment.id} ({payment.status})",
    )


def quick_payment_settle(payment_id: str) -> dict[str, str]:
    """Ask for every transaction the payment needs now; {business key: status} of those asked for. The
    mechanics are the collection kernel's (chains.collection); the payment's rules are here: it counts once
    paid or expired, its amount goes to its recipient once swept, and an expired one returns what it counted."""
    payment = QuickPayment.objects.filter(pk=payment_id).first()
    if payment is None:
        return {}
    address = _address(payment)
    sent: dict[str, str] = {}
    deposits = list(QuickPaymentDeposit.objects.filter(payment=payment).select_related("deposit"))
    if address.held(d.deposit for d in deposits):
        return {}
    counted = sum(int(d.counted) for d in deposits)
    counted_sweep = None
    if counted and payment.status != QuickPayment.Status.AWAITING_PAYMENT:
        counted_sweep, short = sweep_counted(address, payment.token_address, counted, sent)
        if short:
            return sent
    if (
        counted_sweep is not None
        and counted_sweep.status == MINED
        and payment.status == QuickPayment.Status.PAID
    ):
        tx = outbox_transfer(
            key=outbox_key(OwnerKind.QUICKPAY, payment.id, Step.PAYOUT),
            chain_id=payment.chain_id,
            signer=Signer.VAULT,
            token=payment.token_address,
            to=payment.recipient_address,
            amount=int(payment.amount),
        )
        sent[tx.key] = tx.status
    expired = payment.status == QuickPayment.Status.EXPIRED
    going = [
        address.owes(
            item.deposit,
            (int(item.refund), Step.REFUND),
            *([(int(item.counted), Step.RETURN)] if expired else []),
            with_counted=bool(int(item.counted)),  # its token's balance is swept with the payment's
        )
        for item in deposits
    ]
    send_back(address, going, counted_sweep, sent)
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
