"""Every write of the platform core: organizations, API keys and quick payments."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chains.incidents import incident_record
from chains.models import Incident, OutboxTx
from chains.registry import deposit_address
from chains.tokens import check_amount_worth, token_get
from chains.watcher import watch_address
from core.errors import InvalidRequest
from core.ids import random_base62
from platform_api.context import RequestContext
from platform_api.errors import PlatformError
from platform_api.models import (
    ApiKey,
    Organization,
    Permission,
    QuickPayment,
    QuickPaymentDeposit,
    new_quick_payment_id,
)
from platform_api.signals import record_write

API_KEY_PREFIX = "svc_live_"
API_KEY_RANDOM_LENGTH = 40  # ~238 bits
API_KEY_DISPLAY_LENGTH = len(API_KEY_PREFIX) + 6
MAX_PRESENTED_KEY_LENGTH = 200


def api_key_digest(raw_key: str) -> str:
    # A fast hash is right here: the key has ~238 random bits, so it cannot be
    # brute-forced, and authentication must stay one cheap indexed lookup.
    return hashlib.sha256(raw_key.encode()).hexdigest()


def organization_get_or_create(*, slug: str, name: str | None = None) -> Organization:
    organization, _ = Organization.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return organization


@transaction.atomic
def api_key_create(
    *,
    organization: Organization,
    name: str,
    permissions: list[str],
    expires_at: datetime | None = None,
    ctx: RequestContext | None = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with the full secret, which is never stored and never shown again."""
    unknown = set(permissions) - set(Permission.values)
    if not permissions or unknown:
        raise ValueError(f"permissions must be a non-empty subset of {Permission.values}")
    raw_key = API_KEY_PREFIX + random_base62(API_KEY_RANDOM_LENGTH)
    api_key = ApiKey.objects.create(
        organization=organization,
        name=name,
        permissions=sorted(set(permissions), key=Permission.values.index),
        expires_at=expires_at,
        key_prefix=raw_key[:API_KEY_DISPLAY_LENGTH],
        key_digest=api_key_digest(raw_key),
    )
    if ctx is not None:
        record_write(
            ctx=ctx,
            event_type="api_key.created",
            resource_type="api_key",
            resource_id=api_key.id,
            status_code=201,
        )
    return api_key, raw_key


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey, ctx: RequestContext | None = None) -> ApiKey:
    """Revoke a key for good; it stops authenticating at once. Revoking twice is a no-op."""
    now = timezone.now()
    revoked = ApiKey.objects.filter(pk=api_key.pk, is_active=True).update(is_active=False, revoked_at=now)
    if revoked and ctx is not None:
        record_write(
            ctx=ctx,
            event_type="api_key.revoked",
            resource_type="api_key",
            resource_id=api_key.id,
            status_code=200,
        )
    api_key.refresh_from_db(fields=["is_active", "revoked_at"])
    return api_key


def api_key_authenticate(*, raw_key: str | None) -> ApiKey:
    """The active key matching `raw_key`: one indexed lookup on the digest, no password hasher."""
    if not raw_key:
        raise PlatformError.authentication(
            "key_missing", "No API key: send it as 'Authorization: Bearer <key>' or 'X-API-Key: <key>'."
        )
    invalid = PlatformError.authentication("key_invalid", "The API key is not valid.")
    if not raw_key.startswith(API_KEY_PREFIX) or len(raw_key) > MAX_PRESENTED_KEY_LENGTH:
        raise invalid
    digest = api_key_digest(raw_key)
    api_key = ApiKey.objects.select_related("organization").filter(key_digest=digest).first()
    if api_key is None or not hmac.compare_digest(api_key.key_digest, digest):
        raise invalid
    if not api_key.is_active:
        raise PlatformError.authentication("key_revoked", "This API key has been revoked.")
    now = timezone.now()
    if api_key.is_expired(now):
        raise PlatformError.authentication("key_expired", "This API key has expired.")
    _touch_last_used(api_key, now)
    return api_key


def _touch_last_used(api_key: ApiKey, now: datetime) -> None:
    # At most one write a minute per key, and a conditional one, so concurrent
    # requests do not all write the same row.
    resolution = timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION_SECONDS)
    if api_key.last_used_at is not None and api_key.last_used_at > now - resolution:
        return
    ApiKey.objects.filter(pk=api_key.pk, last_used_at=api_key.last_used_at).update(last_used_at=now)
    api_key.last_used_at = now


QUICK_PAYMENT_OWNER = "quick_payment"


@transaction.atomic
def quick_payment_create(
    *,
    amount: int,
    token_address: str,
    chain_id: int,
    recipient_address: str,
    organization: Organization | None = None,
) -> QuickPayment:
    """Record a one-shot payment in a registry token, give it its own deposit address and watch that address.

    The deposit watcher hands what arrives there to the handler registered for
    owners `quick_payment:<id>` (chains.handlers) until a day after the payment expires (a
    late deposit is still seen, so that it can be refunded).
    """
    token = token_get(chain_id=chain_id, address=token_address)
    if token is None:
        raise InvalidRequest(
            f"{token_address} is not a token this service knows on chain {chain_id}.", field="token_address"
        )
    check_amount_worth(chain_id=chain_id, address=token.address, amount=amount, field="amount")
    payment_id = new_quick_payment_id()
    address = deposit_address(
        chain_id=chain_id, kind=QUICK_PAYMENT_OWNER, identifier=payment_id, field="chain_id"
    )
    now = timezone.now()
    payment = QuickPayment.objects.create(
        id=payment_id,
        organization=organization,
        amount=amount,
        token_address=token.address,
        chain_id=chain_id,
        recipient_address=recipient_address,
        deposit_address=address,
        created_at=now,
        expires_at=now + timedelta(seconds=settings.QUICK_PAY_TTL_SECONDS),
    )
    watch_address(
        chain_id=chain_id,
        address=address,
        owner=f"{QUICK_PAYMENT_OWNER}:{payment_id}",
        watch_until=payment.expires_at + timedelta(days=1),
    )
    return payment


def quick_payment_record_deposit(
    *,
    payment_id: str,
    token: str,
    amount: int,
    from_address: str,
    tx_hash: str,
    deposit_id: int | None = None,
) -> QuickPayment | None:
    """Count a deposit toward a quick payment, under its row lock; the payment when this deposit paid it.

    Only the payment's token counts, and only while the payment awaits it (beat
    marks it expired at `expires_at`, like orders); partial deposits add up. Anything else (another token, a late
    deposit, what arrives after it was paid) stays recorded by the watcher for
    a refund. Runs in the watcher's handling transaction, once per deposit.
    """
    payment = QuickPayment.objects.select_for_update().filter(pk=payment_id).first()
    if payment is None:
        return None
    if deposit_id is not None and QuickPaymentDeposit.objects.filter(deposit_id=deposit_id).exists():
        return None  # handled before (a retried handler)
    counts = (
        payment.status == QuickPayment.Status.AWAITING_PAYMENT
        and token.lower() == payment.token_address.lower()
    )
    owed = max(0, int(payment.amount) - int(payment.amount_received))
    counted = min(amount, owed) if counts else 0
    if deposit_id is not None:
        QuickPaymentDeposit.objects.create(
            payment=payment, deposit_id=deposit_id, counted=counted, refund=amount - counted
        )
    if not counts:
        return None
    payment.amount_received = str(int(payment.amount_received) + amount)
    payment.payer_address = payment.payer_address or from_address
    fields = ["amount_received", "payer_address"]
    if int(payment.amount_received) >= int(payment.amount):
        payment.status, payment.paid_at, payment.tx_hash = QuickPayment.Status.PAID, timezone.now(), tx_hash
        fields += ["status", "paid_at", "tx_hash"]
    payment.save(update_fields=fields)
    return payment if payment.status == QuickPayment.Status.PAID else None


@transaction.atomic
def quick_payment_withdraw_deposit(*, payment_id: str, deposit_id: int) -> None:
    """A reorg took a deposit to the payment off the chain, and it did not come back: it stops counting.

    While the payment still awaits its amount and nothing was sent for the
    deposit, the payment just waits for the rest again. Otherwise staff must
    look: an incident about the payment holds its settlement.
    """
    payment = QuickPayment.objects.select_for_update().filter(pk=payment_id).first()
    item = QuickPaymentDeposit.objects.filter(payment_id=payment_id, deposit_id=deposit_id).first()
    if payment is None or item is None or not (int(item.counted) or int(item.refund)):
        return
    counted = int(item.counted)
    QuickPaymentDeposit.objects.filter(pk=item.pk).update(counted=0, refund=0)
    sent = OutboxTx.objects.filter(
        key__in=[
            f"quickpay:{payment_id}:payout",
            f"quickpay:{payment_id}:refund:{deposit_id}",
            f"quickpay:{payment_id}:return:{deposit_id}",
        ]
    ).exists()
    if payment.status == QuickPayment.Status.AWAITING_PAYMENT and not sent:
        payment.amount_received = str(int(payment.amount_received) - counted)
        payment.save(update_fields=["amount_received"])
        return
    incident_record(
        kind=Incident.Kind.DEPOSIT_REORGED,
        subject=f"{QUICK_PAYMENT_OWNER}:{payment_id}",
        chain_id=payment.chain_id,
        summary=f"quick payment {payment_id} ({payment.status}): a deposit it counted or was returning was taken "
        "off the chain by a reorg; nothing more is sent for it until staff resolve this",
        details={"deposit": deposit_id, "counted": str(counted)},
    )


def quick_payments_expire(*, now: datetime | None = None) -> int:
    """Mark unpaid quick payments whose time has passed as expired (one conditional update); those that
    received part of their amount are settled, which sends it back."""
    due = QuickPayment.objects.filter(
        status=QuickPayment.Status.AWAITING_PAYMENT, expires_at__lte=now or timezone.now()
    )
    partly_paid = list(due.exclude(amount_received="0").values_list("pk", flat=True))
    expired = due.update(status=QuickPayment.Status.EXPIRED)
    for payment_id in partly_paid:
        enqueue_quick_payment_settlement(payment_id)
    return expired


def enqueue_quick_payment_settlement(payment_id: str) -> None:
    from platform_api.tasks import settle_quick_payment

    transaction.on_commit(lambda: settle_quick_payment.delay(payment_id))
