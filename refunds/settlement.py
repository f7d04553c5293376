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

from chains.collection import DepositAddress, send_back, sweep_counted
from chains.keys import OwnerKind, Signer, Step, outbox_key
from chains.models import OutboxTx
from chains.outbox import outbox_transfer
from core.errors import InvalidRequest
from refunds.common import REFUND_OWNER
from refunds.crosschain import crosses, order_funding, refund_order
from refunds.models import Refund, RefundDeposit
from refunds.services import refund_delivery_failed

MINED = OutboxTx.Status.MINED
Status = Refund.Status


def _address(refund: Refund) -> DepositAddress:
    return DepositAddress(
        owner=OwnerKind.REFUND,
        identifier=refund.id,
        chain_id=refund.chain_id,
        salt_kind=REFUND_OWNER,
        subject=refund.owner,
        label=f"refund {refund.id} ({refund.status})",
    )


def refund_settle(refund_id: str) -> dict[str, str]:
    """Ask for every transaction the refund needs now; {business key: status} of those asked for. The
    mechanics are the collection kernel's (chains.collection); the refund's rules are here: it is funded by
    its balance or by its counted deposits once swept, delivered to its payer (or through an order elsewhere),
    and a refund canceled before it was funded returns what it counted."""
    refund = Refund.objects.filter(pk=refund_id).first()
    if refund is None:
        return {}
    deposits = list(RefundDeposit.objects.filter(refund=refund).select_related("deposit"))
    address = _address(refund)
    if address.held(d.deposit for d in deposits):
        return {}
    sent: dict[str, str] = {}
    counted = sum(int(d.counted) for d in deposits)
    counted_sweep = None
    if counted and refund.status != Status.REQUIRES_FUNDING:
        counted_sweep, short = sweep_counted(address, refund.token_address, counted, sent)
        if short:
            return sent
    funded = refund.funding_method == Refund.Funding.BALANCE or (
        counted_sweep is not None and counted_sweep.status == MINED and counted >= int(refund.amount)
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
            tx = outbox_transfer(
                key=outbox_key(OwnerKind.REFUND, refund.id, Step.DELIVERY),
                chain_id=refund.chain_id,
                signer=Signer.VAULT,
                token=refund.token_address,
                to=refund.destination_address,
                amount=int(refund.amount),
            )
        sent[tx.key] = tx.status
    canceled = refund.status == Status.CANCELED
    going = [
        address.owes(
            item.deposit,
            (int(item.returned), Step.RETURN),
            *([(int(item.counted), Step.UNFUNDED)] if canceled else []),
            with_counted=bool(int(item.counted)),  # its token's balance is swept with the refund's funding
        )
        for item in deposits
    ]
    send_back(address, going, counted_sweep, sent)
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
