"""Test mode: each live organization may have a sandbox, an organization of its own that transacts on test
chains only.

Being another tenant is the isolation: every query of the platform is scoped to one organization, so the
sandbox's orders, links, customers, balances, analytics, events, webhook endpoints and keys are never listed,
counted or paid with the live organization's. What makes it test mode:

- its keys begin `svc_test_` (platform_api.services), so a developer sees which mode a key is for;
- every chain it names, and every chain its payments go through, is a test chain (a devnet or a public
  test network: `chains.testchains`): the chain fields refuse others while a request acts for it
  (`chains.testchains.acting_in_test_mode`, set by authentication and by the dashboard), and
  `order_create` refuses them whatever created the order (a payer on its payment link, a quick payment,
  an x402 offer);
- its events say `"livemode": false`;
- test helpers (checkout.test_helpers, refunds.test_helpers) pay its checkouts and fund its refunds from
  the devnet wallet, and answer no live key.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from chains.models import Token
from chains.registry import chains
from chains.testchains import test_chain_refusal
from core.errors import Forbidden, InvalidRequest
from platform_api.models import ApiKey, Organization

SANDBOX_SLUG_SUFFIX = "-test"


def ensure_test_chains(organization: Organization | None, chains_named: dict[str, int]) -> None:
    """400 naming the field, when a test-mode organization names a chain that is not a test chain; the one
    rule every payment of a sandbox passes through (orders.creation), whatever asked for it."""
    if organization is None or organization.livemode:
        return
    for field, chain_id in chains_named.items():
        if (refusal := test_chain_refusal(chain_id)) is not None:
            raise InvalidRequest(refusal, field=field)


def ensure_test_key(api_key: ApiKey) -> None:
    """403 for a live key: the test helpers answer test-mode keys only."""
    if api_key.livemode:
        raise Forbidden(
            "Test helpers answer test-mode keys only (svc_test_…): make one in the dashboard's test mode or "
            "with `manage.py create_api_key --test`."
        )


def _sandbox_defaults(live: Organization) -> dict:
    """What the sandbox starts with: the live organization's face and recipient; the payout chain and token
    only if they are a test chain's, else the first test chain taking payments and its first stablecoin."""
    fields: dict[str, Any] = {
        "name": f"{live.name} (test mode)"[:200],
        "contact_email": live.contact_email,
        "description": live.description,
        "website_url": live.website_url,
        "brand_color": live.brand_color,
        "support_email": live.support_email,
        "support_url": live.support_url,
        "redirect_domains": list(live.redirect_domains or []),
        "default_recipient_address": live.default_recipient_address,
    }
    chain_id = live.default_chain_id
    if chain_id is not None and test_chain_refusal(chain_id) is None:
        fields |= {"default_chain_id": chain_id, "default_token_address": live.default_token_address}
        return fields
    for chain in chains():
        if chain.for_tests and chain.accepts_payments:
            dollar = (
                Token.objects.filter(chain_id=chain.chain_id, symbol__icontains="usd")
                .order_by("symbol")
                .values_list("address", flat=True)
                .first()
            )
            return fields | {"default_chain_id": chain.chain_id, "default_token_address": dollar or ""}
    return fields


def organization_sandbox(live: Organization) -> Organization:
    """The live organization's test mode, made on first use (two callers at once: one sandbox)."""
    if not live.livemode:
        return live
    found = Organization.objects.filter(sandbox_of=live).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return Organization.objects.create(
                slug=f"{live.slug[:50]}{SANDBOX_SLUG_SUFFIX}-{live.id[-6:].lower()}",
                livemode=False,
                sandbox_of=live,
                updated_at=timezone.now(),
                **_sandbox_defaults(live),
            )
    except IntegrityError:
        return Organization.objects.get(sandbox_of=live)
