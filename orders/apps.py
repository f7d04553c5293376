from django.apps import AppConfig


class OrdersConfig(AppConfig):
    name = "orders"
    verbose_name = "Orders"

    def ready(self) -> None:
        # What the chains app hands up (chains.handlers): deposits to orders' addresses and the outcomes of
        # their outbox transactions; registered where they are handled.
        from orders import accounting, deposits, receivers, settlement  # noqa: F401

        accounting.connect()  # the fee an order earned, in the ledger
        receivers.connect()  # the order interface's own orders: their sessions and payment webhooks
