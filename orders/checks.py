"""Django system checks of the orders' settings (`manage.py check`, and every `migrate`, so `make run` and a
deployment's migration step refuse to go on): a configuration that would refund every order of a kind is an
error at start, not a surprise at the first payment."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register


@register()
def relay_depositories(app_configs, **kwargs) -> list[Error]:
    """With the relay provider delivering, every ERC-20 order's relay asks the vault to approve the provider's
    depository, and only a pinned one (RELAY_DEPOSITORIES) is approved: without any, every ERC-20 order is
    refunded ("not the relay provider's depository")."""
    if settings.RELAY_PROVIDER != "relay" or settings.RELAY_DEPOSITORIES:
        return []
    return [
        Error(
            "RELAY_PROVIDER=relay, but RELAY_DEPOSITORIES pins no depository: every ERC-20 order would be "
            "refunded, since the vault approves only a pinned depository.",
            hint="Set RELAY_DEPOSITORIES=<chain id>:<depository address>,... from the relay provider's "
            "published contract addresses, one per chain that takes payments (docs/configuration.md).",
            id="orders.E001",
        )
    ]
