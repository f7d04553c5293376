from django.apps import AppConfig


class OrdersConfig(AppConfig):
    name = "orders"
    verbose_name = "Orders"

    def ready(self) -> None:
        # What the chains app hands up (chains.handlers): deposits to orders' addresses and the outcomes of
        # their outbox transactions; registered where they are handled.
        # And what an order's lifecycle means here (orders.events): the fee an order earned, in the ledger
        # (accounting). The order interface's own orders are followed by the checkout (checkout.interface):
        # their sessions, then their payment webhooks.
        # Each order's API body is rendered again on every change (orders.bodies).
        # The settings' system checks (orders.checks).
        # The OpenAPI schema names the `type` of each order type's request shape (a one-value enum) after
        # the type: `MintNftTypeEnum`, from the order types' registry (orders.types), read when a schema is
        # generated.
        from django.conf import settings

        from orders import (  # noqa: F401
            accounting,
            bodies,
            checks,
            deposits,
            fronting,
            metrics,
            settlement,
        )
        from orders.types import TYPES, camel

        settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"].update(
            {f"{camel(name)}TypeEnum": [name] for name in TYPES}
        )
