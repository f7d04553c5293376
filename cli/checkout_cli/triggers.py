"""`trigger`: real test-mode objects, made through the public API and driven to an event by its test helpers
(the devnet wallet pays a checkout, funds a refund). Nothing is faked: the event comes from the service's
own money path, as it would for a payer, and reaches every endpoint and `listen` as any event does.

| event                                   | what is done                                                    |
|-----------------------------------------|-----------------------------------------------------------------|
| payment.completed, checkout.completed   | a checkout session, paid in full by the devnet wallet           |
| payment.failed                          | a checkout session paid in part, then expired: what came back   |
| checkout.expired                        | a checkout session, expired                                      |
| refund.created, refund.updated,         | a payment as above, then a refund of it, funded by the wallet   |
| refund.succeeded                        | (refund.updated: its funding arrived, it is pending)            |
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from checkout_cli.service import Service, ServiceError

# Where a trigger's checkout pays when test mode names no default recipient: an address nobody holds a key
# for, so that what a trigger moves on a devnet is plainly a test's.
TEST_RECIPIENT = "0x000000000000000000000000000000000000dEaD"
TRIGGERS = (
    "payment.completed",
    "checkout.completed",
    "payment.failed",
    "checkout.expired",
    "refund.created",
    "refund.updated",
    "refund.succeeded",
)


def amount_explained(data: dict[str, Any]) -> str | None:
    """Why a payment event's `amount` is not what was paid (the service's fee, what went back), or None when
    it is, or when the event is not a payment's."""
    try:
        paid, amount = int(data["source_amount"]), int(data["amount"])
        fee, back = int(data.get("fee_amount") or 0), int(data.get("refunded_amount") or 0)
    except (KeyError, TypeError, ValueError):
        return None
    if paid == amount:
        return None
    parts = [f"  amount {amount}: the {paid} paid"]
    if fee:
        parts.append(f"less the service's fee of {fee}")
    if back:
        parts.append(f"less {back} sent back to the payer")
    if paid - fee - back != amount:
        parts.append("priced into the merchant's token")
    return ", ".join(parts)


class TriggerError(Exception):
    """The trigger cannot go on: its message says why and what to do."""


def _mentions(value: Any, wanted: str) -> bool:
    """Whether `wanted` (an object's id) is any value inside `value`."""
    if isinstance(value, dict):
        return any(_mentions(v, wanted) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, wanted) for v in value)
    return value == wanted


class Trigger:
    def __init__(self, service: Service, *, say: Callable[[str], None], amount: int, timeout: float) -> None:
        self.service, self.say, self.amount, self.timeout = service, say, amount, timeout
        self.started = time.monotonic()

    def run(self, event_type: str) -> dict[str, Any]:
        """Make `event_type` happen; the event, once the service has recorded it."""
        organization = self.service.call("GET", "/api/v1/organization")
        if organization.get("livemode") is not False:
            raise TriggerError(
                "trigger works in test mode only: use a test-mode key (svc_test_…, from the dashboard's test "
                "mode or `manage.py create_api_key --test`); it pays on the devnets, never on a live chain"
            )
        since = int(time.time() * 1000) - 2000
        if event_type == "checkout.expired":
            session = self._session(organization)
            self.service.call("POST", f"/api/v1/checkout-sessions/{session['id']}/expire")
            self.say(f"  expired {session['id']}")
            return self._wait(event_type, session["id"], since)
        if event_type == "payment.failed":
            session = self._session(organization)
            self._pay(session, amount=max(1, self.amount // 2))
            self.service.call("POST", f"/api/v1/checkout-sessions/{session['id']}/expire")
            self.say(f"  expired {session['id']} before the rest came: what was paid goes back")
            return self._wait(event_type, session["id"], since)
        session = self._session(organization)
        self._pay(session)
        if event_type in ("payment.completed", "checkout.completed"):
            return self._wait(event_type, session["id"], since)
        paid = self._wait("payment.completed", session["id"], since)
        refund = self.service.call(
            "POST",
            "/api/v1/refunds",
            json={
                "transaction": paid["data"]["id"],
                "reason": "requested_by_customer",
                "metadata": {"created_by": "checkout-cli trigger"},
            },
        )
        self.say(f"  refund {refund['id']} of {paid['data']['id']} ({refund['status']})")
        if refund["status"] == "requires_funding":
            funded = self.service.call("POST", f"/api/v1/test-helpers/refunds/{refund['id']}/fund")
            self.say(f"  funded {funded['amount']} from the devnet wallet: {funded['tx_hash']}")
        return self._wait(event_type, refund["id"], since)

    def _session(self, organization: dict[str, Any]) -> dict[str, Any]:
        chain_id, token = organization.get("default_chain_id"), organization.get("default_token_address")
        if not chain_id or not token:
            raise TriggerError(
                "test mode has no default chain and token to pay in: set them with PATCH /api/v1/organization "
                "(default_chain_id, default_token_address: a devnet's)"
            )
        recipient = organization.get("default_recipient_address") or TEST_RECIPIENT
        session = self.service.call(
            "POST",
            "/api/v1/checkout-sessions",
            json={
                "chain_id": chain_id,
                "token_address": token,
                "recipient_address": recipient,
                "amount": str(self.amount),
                "metadata": {"created_by": "checkout-cli trigger"},
            },
        )
        self.say(
            f"  checkout session {session['id']}: {self.amount} of {token} on chain {chain_id} to {recipient}"
        )
        return session

    def _pay(self, session: dict[str, Any], *, amount: int | None = None) -> None:
        body = {"amount": str(amount)} if amount is not None else {}
        paid = self.service.call(
            "POST", f"/api/v1/test-helpers/checkout-sessions/{session['id']}/pay", json=body, timeout=60
        )
        self.say(
            f"  paid {paid['amount']} from the devnet wallet to {paid['deposit_address']}: {paid['tx_hash']}"
        )

    def _wait(self, event_type: str, about: str, since: int) -> dict[str, Any]:
        """The first `event_type` event since `since` that names `about`, polling the events API."""
        self.say(f"  waiting for {event_type} …")
        while time.monotonic() - self.started < self.timeout:
            answer = self.service.call(
                "GET", "/api/v1/webhook-events", params={"type": event_type, "from": since, "limit": 100}
            )
            for event in answer["data"]:
                if _mentions(event["data"], about):
                    return event
            time.sleep(0.5)
        raise TriggerError(
            f"no {event_type} for {about} within {self.timeout:g} s: are the service's workers running "
            "(`make run` starts them)?"
        )


def trigger(service: Service, event_type: str, *, say: Callable[[str], None], amount: int, timeout: float):
    try:
        return Trigger(service, say=say, amount=amount, timeout=timeout).run(event_type)
    except ServiceError as exc:
        raise TriggerError(str(exc)) from None
