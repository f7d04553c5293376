"""The checkout's own records. (Its payment links, sessions and discount codes are still `platform_api`'s
models; they move here in a later step.)"""

from __future__ import annotations

from django.db import models


class SessionOrder(models.Model):
    """The order that pays (or paid, or was replaced before it was paid) a platform checkout session.

    A session has one waiting order at a time: when the payer picks another
    token, the unpaid order expires and another is created. The order knows
    only that the checkout owns it (`Order.owner`); this is the link.
    """

    session = models.ForeignKey(
        "platform_api.PlatformCheckoutSession", on_delete=models.PROTECT, related_name="session_orders"
    )
    order = models.OneToOneField("orders.Order", on_delete=models.PROTECT, related_name="session_order")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["session", "created_at"], name="checkout_session_order_latest")]

    def __str__(self) -> str:
        return f"{self.session_id} paid by {self.order_id}"
