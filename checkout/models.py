"""The checkout's records: payment links and their items, checkout sessions (the platform's and the order
interface's) and the orders that pay them, discount codes, widgets, link visits, and each payment's transaction.

The tables were `platform_api`'s and keep their names (`db_table`): only Django's state moved here
(`checkout 0002`). A session and a transaction name their customer (`merchant.Customer`, the app
below this one) once the payment completes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext

from core.dbfields import EncryptedJSONField, EncryptedTextField, Uint256Field
from core.ids import public_id, random_base62

if TYPE_CHECKING:
    from platform_api.models import Organization


def new_link_id() -> str:
    return public_id("pl")


def new_link_item_id() -> str:
    return public_id("pli")


def new_session_id() -> str:
    return public_id("cs")


def new_discount_code_id() -> str:
    return public_id("dc")


def new_transaction_id() -> str:
    return public_id("txn")


def new_visitor_id() -> str:
    return public_id("vis")


def new_widget_id() -> str:
    return public_id("wgt")


def new_short_code() -> str:
    return random_base62(8)


class PaymentLink(models.Model):
    """A reusable link to the hosted checkout page, for a fixed or a payer-chosen amount."""

    id = models.CharField(primary_key=True, max_length=32, default=new_link_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="payment_links"
    )
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    short_code = models.CharField(max_length=8, unique=True, default=new_short_code, editable=False)
    token_address = models.CharField(max_length=42)
    chain_id = models.PositiveBigIntegerField()
    recipient_address = models.CharField(max_length=42)
    amount = Uint256Field(null=True, blank=True, help_text="Fixed price; empty for a payer-chosen amount.")
    min_amount = Uint256Field(null=True, blank=True)
    max_amount = Uint256Field(null=True, blank=True)
    suggested_amount = Uint256Field(null=True, blank=True)
    product_id = models.CharField(max_length=32, null=True, blank=True)
    image_url = models.URLField(max_length=2048, blank=True)
    theme_color = models.CharField(max_length=7, blank=True)
    button_text = models.CharField(max_length=50, default="Pay")
    max_uses = models.PositiveIntegerField(
        null=True, blank=True, help_text="Completed payments; empty = no limit."
    )
    current_uses = models.PositiveIntegerField(default=0, help_text="Completed payments so far.")
    expires_at = models.DateTimeField(null=True, blank=True)
    form_schema = models.JSONField(default=dict, blank=True)
    shipping_options = models.JSONField(default=list, blank=True)
    collect_shipping_address = models.BooleanField(default=False)
    return_url = models.URLField(max_length=2048, blank=True)
    return_label = models.CharField(max_length=100, blank=True)
    branding = models.JSONField(default=dict, blank=True)
    fee_on_top = models.BooleanField(default=False, help_text="The payer pays the service fee on top.")
    is_active = models.BooleanField(default=True)
    deleted_at = models.DateTimeField(
        null=True, blank=True, help_text="Deleted through the API: gone from it, kept for its payments."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "platform_api_paymentlink"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="link_org_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.short_code})"

    def unavailable_reason(self, now=None) -> str | None:
        """Why the link cannot be paid now, or None."""
        if self.deleted_at is not None or not self.is_active:
            return gettext("This payment link is not active.")
        if self.expires_at is not None and self.expires_at <= (now or timezone.now()):
            return gettext("This payment link has expired.")
        if self.max_uses is not None and self.current_uses >= self.max_uses:
            return gettext("This payment link has reached its maximum number of payments.")
        return None


class PaymentLinkItem(models.Model):
    """A line item shown on the link's page; the link's `amount` is what is charged."""

    id = models.CharField(primary_key=True, max_length=32, default=new_link_item_id, editable=False)
    payment_link = models.ForeignKey(PaymentLink, on_delete=models.CASCADE, related_name="items")
    name = models.CharField(max_length=100)
    amount = Uint256Field()
    quantity = models.PositiveIntegerField(default=1)
    description = models.CharField(max_length=500, blank=True)
    image_url = models.URLField(max_length=2048, blank=True)
    sort_order = models.IntegerField(default=0)
    product_id = models.CharField(max_length=32, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "platform_api_paymentlinkitem"
        ordering = ["sort_order", "created_at", "id"]

    def __str__(self) -> str:
        return self.name


class CheckoutSessionQuerySet(models.QuerySet):
    def platform(self) -> CheckoutSessionQuerySet:
        """The platform's `cs_` sessions: what `/api/v1`, the hosted page and the dashboard show."""
        return self.filter(created_through=CheckoutSession.CreatedThrough.PLATFORM)

    def order_interface(self) -> CheckoutSessionQuerySet:
        """The order interface's sessions (`/checkout-sessions`, UUID ids)."""
        return self.filter(created_through=CheckoutSession.CreatedThrough.ORDER_INTERFACE)


class CheckoutSession(models.Model):
    """One payer's checkout, paid by at most one order at a time: the one checkout session of the service.

    Created through the platform (`cs_` ids, for a payment link, a widget or an amount: it names the token,
    chain, recipient and amount) or through the order interface (UUID ids: the merchant's order names the
    rest). `open -> processing` (the payment arrived) `-> completed`; `open -> expired` (time-out, the expire
    call, its link deleted, or an order interface session's order failing or expiring unpaid);
    `processing -> failed` (a platform session whose payment was refunded). Each interface shows it in its
    own words: `checkout.interface.session_data` (the order interface says `complete`) and
    `checkout.serializers.PlatformSessionSerializer`.
    """

    class Status(models.TextChoices):
        OPEN = "open"
        PROCESSING = "processing"
        COMPLETED = "completed"
        EXPIRED = "expired"
        FAILED = "failed"

    class CreatedThrough(models.TextChoices):
        PLATFORM = "platform"
        ORDER_INTERFACE = "order_interface", "Order interface"

    id = models.CharField(primary_key=True, max_length=36, default=new_session_id, editable=False)
    created_through = models.CharField(
        max_length=16,
        choices=CreatedThrough.choices,
        default=CreatedThrough.PLATFORM,
        help_text="Which interface made it, and so shows it.",
    )
    organization = models.ForeignKey(
        "platform_api.Organization",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="platform_sessions",
        help_text="Empty only for an order interface session made without an API key.",
    )
    widget = models.ForeignKey(
        "Widget",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sessions",
        help_text="The widget the payer started from, if any.",
    )
    payment_link = models.ForeignKey(
        PaymentLink, null=True, blank=True, on_delete=models.PROTECT, related_name="sessions"
    )
    product_id = models.CharField(max_length=32, null=True, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    amount = Uint256Field(null=True, blank=True, help_text="What the payer pays, after any discount.")
    token_address = models.CharField(max_length=42, blank=True)
    chain_id = models.PositiveBigIntegerField(null=True, blank=True)
    recipient_address = models.CharField(max_length=42, blank=True)
    success_url = models.CharField(max_length=2048, blank=True)
    cancel_url = models.CharField(max_length=2048, blank=True)
    client_reference_id = models.CharField(max_length=255, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    customer_email = EncryptedTextField()
    customer_name = EncryptedTextField()
    discount_code = models.ForeignKey(
        "DiscountCode", null=True, blank=True, on_delete=models.PROTECT, related_name="sessions"
    )
    discount_amount = Uint256Field(null=True, blank=True)
    discount_reserved = models.BooleanField(
        default=False, help_text="Holds one of the code's uses until the payment completes or fails."
    )
    tx_hash = models.CharField(max_length=66, blank=True)
    payer_address = models.CharField(max_length=42, blank=True)
    customer = models.ForeignKey(
        "merchant.Customer", null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions"
    )
    form_data = EncryptedJSONField(default=dict, blank=True, help_text="The payer's answers (encrypted).")
    shipping_address = EncryptedJSONField(null=True, blank=True, help_text="Encrypted.")
    shipping_option = models.JSONField(null=True, blank=True)
    utm_source = models.CharField(max_length=200, blank=True)
    utm_medium = models.CharField(max_length=200, blank=True)
    utm_campaign = models.CharField(max_length=200, blank=True)
    locale = models.CharField(
        max_length=10, blank=True, help_text="The language the payer's page was in: their receipt email's."
    )
    completed_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = CheckoutSessionQuerySet.as_manager()

    class Meta:
        db_table = "platform_api_platformcheckoutsession"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="psession_org_created"),
            models.Index(fields=["payment_link", "-created_at"], name="psession_link_created"),
            models.Index(fields=["status", "expires_at"], name="psession_status_expiry"),
            # The dashboard's payment search by the merchant's reference.
            models.Index(fields=["organization", "client_reference_id"], name="psession_org_reference"),
        ]

    def __str__(self) -> str:
        return self.id

    # A platform session always names its merchant and where the merchant is paid; only a session made on the
    # order interface may lack them (its order names them). The platform's code reads them through these.
    @property
    def merchant(self) -> Organization:
        if self.organization is None:
            raise ValueError(f"checkout session {self.id} has no organization (an order interface session)")
        return self.organization

    @property
    def paid_on_chain(self) -> int:
        if self.chain_id is None:
            raise ValueError(f"checkout session {self.id} names no chain (an order interface session)")
        return self.chain_id


class DiscountCode(models.Model):
    """A code that lowers a checkout's amount; its uses are held by checkouts in flight and counted on completion."""

    class Type(models.TextChoices):
        PERCENTAGE = "percentage"
        FIXED = "fixed"

    id = models.CharField(primary_key=True, max_length=32, default=new_discount_code_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="discount_codes"
    )
    code = models.CharField(max_length=50, help_text="Stored upper-case.")
    type = models.CharField(max_length=20, choices=Type.choices)
    value = Uint256Field(help_text="Percent (1..100), or the smallest token unit.")
    payment_link = models.ForeignKey(
        PaymentLink, null=True, blank=True, on_delete=models.CASCADE, related_name="discount_codes"
    )
    max_uses = models.PositiveIntegerField(null=True, blank=True)
    current_uses = models.PositiveIntegerField(default=0, help_text="Completed payments with the code.")
    reserved_uses = models.PositiveIntegerField(default=0, help_text="Checkouts in flight holding a use.")
    min_order_amount = Uint256Field(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "platform_api_discountcode"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "code"],
                condition=Q(deleted_at__isnull=True),
                name="discount_org_code",
            ),
            models.CheckConstraint(
                condition=Q(max_uses__isnull=True) | Q(current_uses__lte=models.F("max_uses")),
                name="discount_uses_within_max",
            ),
        ]
        indexes = [models.Index(fields=["organization", "-created_at"], name="discount_org_created")]

    def __str__(self) -> str:
        return self.code


class Transaction(models.Model):
    """The merchant's view of one payment it received: one row per checkout order, and one per quick payment of
    the organization (`quick_payment_id`, no order: the payer paid the payment's own address on its chain)."""

    class Status(models.TextChoices):
        PENDING = "pending"  # a deposit was seen, not yet the whole amount
        CONFIRMING = "confirming"  # paid in full; being delivered
        COMPLETED = "completed"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=32, default=new_transaction_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="transactions"
    )
    order_id = models.UUIDField(
        unique=True, null=True, blank=True, help_text="The order underneath (none for a quick payment)."
    )
    quick_payment_id = models.CharField(
        max_length=32,
        unique=True,
        null=True,
        blank=True,
        help_text="The quick payment (qp_) it records, if one.",
    )
    session = models.ForeignKey(
        CheckoutSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="transactions"
    )
    payment_link = models.ForeignKey(
        PaymentLink, null=True, blank=True, on_delete=models.SET_NULL, related_name="transactions"
    )
    customer = models.ForeignKey(
        "merchant.Customer", null=True, blank=True, on_delete=models.SET_NULL, related_name="transactions"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    tx_hash = models.CharField(max_length=66, blank=True, help_text="The payer's (first) deposit.")
    chain_id = models.PositiveBigIntegerField(help_text="Where the merchant is paid.")
    from_address = models.CharField(max_length=42, blank=True)
    to_address = models.CharField(max_length=42)
    token_address = models.CharField(max_length=42)
    amount = Uint256Field(help_text="What the merchant receives.")
    amount_usd = models.DecimalField(max_digits=20, decimal_places=2, null=True, blank=True)
    source_chain_id = models.PositiveBigIntegerField()
    source_token_address = models.CharField(max_length=42)
    source_amount = Uint256Field(help_text="What arrived from the payer (the price asked, or more).")
    refunded_amount = Uint256Field(
        default=0,
        help_text="What goes back to the payer: what arrived beyond the price, in the source token.",
    )
    fee_amount = Uint256Field(default=0, help_text="The service fee, in the source token.")
    amount_refunded = Uint256Field(
        default=0,
        help_text="What the merchant's refunds (refunds app) give back of `amount`: pending and succeeded ones.",
    )
    refund_ids = models.JSONField(
        default=list, blank=True, help_text="The merchant's refunds (re_), oldest first."
    )
    refunds_paid = models.JSONField(
        default=list,
        blank=True,
        help_text="The merchant's refunds the payer holds, oldest first, as the receipt shows them: "
        "[{refund, amount, chain_id, token_address, to, tx_hash}].",
    )
    form_data = EncryptedJSONField(default=dict, blank=True, help_text="The payer's answers (encrypted).")
    shipping_address = EncryptedJSONField(null=True, blank=True, help_text="Encrypted.")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "platform_api_transaction"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="txn_org_created"),
            models.Index(fields=["organization", "status", "-created_at"], name="txn_org_status_created"),
            # Analytics: completed payments by completion time, covering what the overview sums and groups by
            # (PostgreSQL answers it from the index alone; other backends ignore `include`).
            models.Index(
                fields=["organization", "status", "completed_at"],
                include=["amount_usd", "chain_id", "token_address", "payment_link"],
                name="txn_analytics_covering",
            ),
            models.Index(fields=["payment_link", "-created_at"], name="txn_link_created"),
            models.Index(fields=["customer", "-created_at"], name="txn_customer_created"),
            # The dashboard's payment search: by the deposit's hash, or by the payer's address.
            models.Index(fields=["organization", "tx_hash"], name="txn_org_hash"),
            models.Index(fields=["organization", "from_address"], name="txn_org_payer"),
        ]

    def __str__(self) -> str:
        return self.id


class LinkVisit(models.Model):
    """One view of a link's hosted page; never the visitor's IP address."""

    id = models.CharField(primary_key=True, max_length=32, default=new_visitor_id, editable=False)
    payment_link = models.ForeignKey(PaymentLink, on_delete=models.CASCADE, related_name="visits")
    country = models.CharField(max_length=2, blank=True)
    referrer = models.CharField(max_length=500, blank=True)
    user_agent = models.CharField(max_length=500, blank=True)
    utm_source = models.CharField(max_length=200, blank=True)
    utm_medium = models.CharField(max_length=200, blank=True)
    utm_campaign = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "platform_api_linkvisit"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["payment_link", "-created_at"], name="visit_link_created")]


class Widget(models.Model):
    """An embeddable card (`/widgets/{short_code}`, iframe-friendly) that starts a checkout or shows a swap or NFT."""

    class Type(models.TextChoices):
        SWAP = "swap"
        CHECKOUT = "checkout"
        NFT = "nft", "NFT"
        DEPOSIT = "deposit"

    id = models.CharField(primary_key=True, max_length=32, default=new_widget_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="widgets"
    )
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    widget_type = models.CharField(max_length=20, choices=Type.choices)
    config = models.JSONField(default=dict, blank=True, help_text="Validated per widget type.")
    theme = models.JSONField(default=dict, blank=True)
    short_code = models.CharField(max_length=8, unique=True, default=new_short_code, editable=False)
    is_active = models.BooleanField(default=True)
    current_views = models.PositiveBigIntegerField(default=0, help_text="Views of the widget's page so far.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "platform_api_widget"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="widget_org_created")]

    def __str__(self) -> str:
        return self.name


class WidgetEvent(models.Model):
    """A view of a widget's page, a checkout started from it, or one completed: counted, never the viewer's IP."""

    class Kind(models.TextChoices):
        VIEW = "view"
        INTERACTION = "interaction"
        COMPLETION = "completion"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    session_id = models.CharField(
        max_length=32, blank=True, help_text="The checkout session an interaction or completion is about."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "platform_api_widgetevent"
        indexes = [models.Index(fields=["widget", "created_at"], name="widget_event_created")]
        constraints = [
            models.UniqueConstraint(  # a session is started and completed once: a replayed hook counts nothing
                fields=["widget", "kind", "session_id"],
                condition=~Q(session_id=""),
                name="widget_event_once_per_session",
            )
        ]


class SessionOrder(models.Model):
    """The order that pays (or paid, or was replaced before it was paid) a platform checkout session.

    A session has one waiting order at a time: when the payer picks another
    token, the unpaid order expires and another is created. The order knows
    only that the checkout owns it (`Order.owner`); this is the link.
    """

    session = models.ForeignKey(CheckoutSession, on_delete=models.PROTECT, related_name="session_orders")
    order = models.OneToOneField("orders.Order", on_delete=models.PROTECT, related_name="session_order")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["session", "created_at"], name="checkout_session_order_latest")]

    def __str__(self) -> str:
        return f"{self.session_id} paid by {self.order_id}"
