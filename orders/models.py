"""Orders with their transactions (deposits, relays, refunds) and the history of their statuses."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from core.dbfields import EncryptedJSONField, Uint256Field


class Order(models.Model):
    """One payment: a deposit on the source chain turned into an outcome on the destination chain."""

    class Type(models.TextChoices):
        SWAP = "swap", "swap"
        X402_SWAP = "x402_swap", "x402_swap"
        DUEL = "duel", "duel"
        CUSTOM = "custom", "custom"
        CUSTOM_EXACT_IN = "custom_exact_in", "custom_exact_in"
        MINT_NFT = "mint_nft", "mint_nft"
        JOIN_TOURNAMENT = "join_tournament", "join_tournament"
        FUND_TOURNAMENT = "fund_tournament", "fund_tournament"

    class Status(models.TextChoices):
        SCANNING_DEPOSIT = "scanning_deposit_transaction", "scanning_deposit_transaction"
        WAITING_STRIPE_PAYMENT = "waiting_stripe_payment", "waiting_stripe_payment"
        EXPIRED = "expired", "expired"
        SENDING_TOKEN_FROM_VAULT = "sending_token_from_vault", "sending_token_from_vault"
        QUOTING_AFTER_DEPOSIT = "quoting_after_deposit", "quoting_after_deposit"
        RELAY = "relay", "relay"
        EXECUTING = "executing", "executing"
        EXECUTED = "executed", "executed"
        REFUNDING = "refunding", "refunding"
        REFUNDED = "refunded", "refunded"
        FAILURE = "failure", "failure"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", null=True, blank=True, on_delete=models.PROTECT, related_name="orders"
    )
    checkout_session_id = models.CharField(
        max_length=36,
        null=True,
        blank=True,
        unique=True,
        help_text="The order interface's checkout session this order pays (checkout.CheckoutSession; at most "
        "one order each). A platform session's orders are the checkout's SessionOrder rows.",
    )
    owner = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="The app that created the order and follows its events (orders.events): "
        "'checkout' for a payment link's or platform session's order, empty for the order interface's.",
    )
    fixed_price = models.BooleanField(
        default=False, help_text="What arrives beyond srcAmount goes back to the payer (a merchant's price)."
    )
    type = models.CharField(max_length=20, choices=Type.choices)
    status = models.CharField(max_length=40, choices=Status.choices, default=Status.SCANNING_DEPOSIT)
    recipient_address = models.CharField(max_length=42)
    refund_address = models.CharField(
        max_length=42,
        blank=True,
        help_text="Where a refund goes when a deposit's sender is unknown (a contract wallet's internal payment).",
    )
    global_address = models.CharField(max_length=42, unique=True, help_text="Service-owned deposit address.")
    src_chain = models.PositiveBigIntegerField()
    dst_chain = models.PositiveBigIntegerField()
    src_token_address = models.CharField(max_length=42)
    dst_token_address = models.CharField(max_length=42)
    src_amount = Uint256Field()
    error_details = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expired_at = models.DateTimeField(help_text="The deposit must arrive before this time.")
    filled_at = models.DateTimeField(null=True, blank=True)
    received_deposit_at = models.DateTimeField(null=True, blank=True)
    creator_address = models.CharField(max_length=42, null=True, blank=True, help_text="Lower-cased.")
    partner_id = models.CharField(max_length=100, null=True, blank=True)
    client_reference_id = models.CharField(max_length=255, null=True, blank=True)
    onramp_metadata = EncryptedJSONField(
        null=True, blank=True, help_text="Includes the payer's IP and fingerprint (encrypted)."
    )
    one_click_buy_url = models.URLField(max_length=2048, null=True, blank=True)
    vendor_b_payment_intent_id = models.CharField(max_length=255, null=True, blank=True)
    settlement = models.JSONField(null=True, blank=True)
    payload = models.JSONField(default=dict)
    metadata = models.JSONField(default=dict)
    action = models.CharField(max_length=255, null=True, blank=True)
    fee = models.JSONField(null=True, blank=True)
    points_amount = models.PositiveBigIntegerField(default=0, help_text="Awarded when the order is executed.")
    points = models.PositiveBigIntegerField(null=True, blank=True)
    execute_tx = models.JSONField(null=True, blank=True)
    status_changed_at = models.DateTimeField(default=timezone.now, help_text="When the status last changed.")

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "status_changed_at"], name="order_status_changed"),
            models.Index(fields=["creator_address", "-created_at"], name="order_creator_created"),
            models.Index(fields=["status", "expired_at"], name="order_status_expiry"),
            models.Index(fields=["organization", "-created_at"], name="order_org_created"),
            models.Index(fields=["client_reference_id"], name="order_client_reference"),
            models.Index(fields=["vendor_b_payment_intent_id"], name="order_payment_intent"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class DepositTx(models.Model):
    """A confirmed deposit to the order's deposit address, as the chain watcher saw it."""

    class RefundReason(models.TextChoices):
        NONE = "", "counted"
        WRONG_TOKEN = "wrong_token", "not the order's token"
        LATE = "late", "arrived after the order stopped waiting (expired, or its session expired)"
        SURPLUS = "surplus", "more than the order's price"

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="deposit_txs")
    deposit = models.OneToOneField(
        "chains.Deposit",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="order_deposit",
        help_text="The transfer as the chain watcher keeps it (none for a card payment).",
    )
    chain = models.PositiveBigIntegerField()
    from_address = models.CharField(max_length=42, null=True, blank=True)
    tx_hash = models.CharField(max_length=66)
    log_index = models.IntegerField(default=-1, help_text="The Transfer log's index; -1 for native coin.")
    block_number = models.BigIntegerField(null=True, blank=True)
    block_hash = models.CharField(max_length=66, blank=True)
    token_address = models.CharField(max_length=42, blank=True, help_text="The zero address is native coin.")
    amount = Uint256Field()
    counted = models.BooleanField(default=True, help_text="Counts toward the order's srcAmount.")
    refund_reason = models.CharField(max_length=20, choices=RefundReason.choices, blank=True)
    refund_amount = Uint256Field(
        null=True,
        blank=True,
        help_text="What goes back to the payer.",
    )
    withdrawn_at = models.DateTimeField(
        null=True, blank=True, help_text="A reorg took its transfer off the chain: it no longer counts."
    )
    refund_to = models.CharField(
        max_length=42,
        blank=True,
        help_text="Entered by staff for a deposit whose sender is unknown and whose order named no refundAddress.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["chain", "tx_hash", "log_index", "order"], name="deposit_unique_log"
            )
        ]
        indexes = [
            # The stuck-order sweep looks for deposits owed back (orders.settlement.orders_stuck) every minute.
            models.Index(
                fields=["created_at"],
                name="deposit_refund_flagged",
                condition=models.Q(refund_amount__isnull=False, withdrawn_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return f"deposit of {self.amount} in {self.tx_hash[:10]}… on chain {self.chain}"


class RelayTx(models.Model):
    """A relay (bridge or swap) transaction that moves the deposit to the destination chain."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCESS = "success"
        FAILURE = "failure"
        REFUND = "refund"
        DELAYED = "delayed"
        WAITING = "waiting"

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="relay_txs")
    chain = models.PositiveBigIntegerField()
    tx_hash = models.CharField(max_length=66)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        # The relay poll reads the provider's recent refunds (orders.settlement.relay_refunds_post).
        indexes = [models.Index(fields=["status", "created_at"], name="relaytx_status_created")]
        # One row per transaction of an order: two settlements of one order at once (its sweep and its delivery
        # finished in the same block) both recorded the delivery, and the next get_or_create failed on it.
        constraints = [models.UniqueConstraint(fields=["order", "tx_hash"], name="relaytx_order_tx_once")]

    def __str__(self) -> str:
        return f"relay {self.tx_hash[:10]}… on chain {self.chain} ({self.status})"


class RefundTx(models.Model):
    """A transfer returning a deposit (or its surplus) to the payer, from the vault."""

    class Status(models.TextChoices):
        SUCCESS = "success"
        FAILURE = "failure"

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="refund_txs")
    deposit = models.ForeignKey(
        DepositTx, null=True, blank=True, on_delete=models.PROTECT, related_name="refund_txs"
    )
    chain = models.PositiveBigIntegerField()
    tx_hash = models.CharField(max_length=66)
    amount = Uint256Field()
    status = models.CharField(max_length=10, choices=Status.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"refund of {self.amount} in {self.tx_hash[:10]}… on chain {self.chain} ({self.status})"


class OrderStatusChange(models.Model):
    """One transition of an order: from, to, when, why and who (the settlement, a staff member, a command)."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="status_changes")
    from_status = models.CharField(max_length=40)
    to_status = models.CharField(max_length=40)
    reason = models.CharField(max_length=500, blank=True)
    actor = models.CharField(max_length=150, default="system")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["order", "created_at"], name="order_status_change_order")]

    def __str__(self) -> str:
        return f"{self.from_status} -> {self.to_status}"


class OrderBody(models.Model):
    """What `GET /orders/{id}` answers for the order (its `data`, as JSON text), rendered in the transaction of
    each change the order's payer can see (orders.bodies), so that reading it is one indexed fetch; `version`
    counts the renders and is the answer's ETag."""

    order = models.OneToOneField(Order, primary_key=True, on_delete=models.CASCADE, related_name="+")
    version = models.PositiveBigIntegerField(default=1)
    body = models.TextField()

    def __str__(self) -> str:
        return f"body of {self.order_id} (version {self.version})"


class UnattributedDeposit(DepositTx):
    """The admin's list of deposits whose sender is unknown (seen by balance): refunded, if they must be, to the
    order's refundAddress or to an address staff enter."""

    class Meta:
        proxy = True
        verbose_name = "unattributed deposit"


class StuckOrder(Order):
    """The admin's list of orders whose settlement has made no progress past its deadline."""

    class Meta:
        proxy = True
        verbose_name = "stuck order"


class SolverAllowance(models.Model):
    """The devnet solver's allowance of one token for one contract, lent to one order at a time.

    A contract order's relay step sets the allowance to exactly what its call
    will spend, and its execute step spends it; two orders for the same
    contract would overwrite each other's allowance, so the second waits until
    the first's call is finished (orders/relays.py).
    """

    chain_id = models.PositiveBigIntegerField()
    token = models.CharField(max_length=42)
    spender = models.CharField(max_length=42)
    order = models.ForeignKey(Order, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    leased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chain_id", "token", "spender"], name="solver_allowance_unique")
        ]


class Inventory(models.Model):
    """The solver's stock of one token on one chain, from which swap orders are delivered as soon as their
    deposit is confirmed ("fast finish", orders/inventory.py), and which the vault refills through the relay
    provider when it falls below its low mark. Amounts in the token's smallest unit."""

    chain_id = models.PositiveBigIntegerField()
    token = models.CharField(
        max_length=42, help_text="The token's address (lowercase); the zero address for the native coin."
    )
    low_mark = Uint256Field(
        default=0,
        help_text="Below this (what the solver holds, less what is on its way out), a refill is asked for.",
    )
    target = Uint256Field(default=0, help_text="What a refill brings the stock back to.")
    max_order = Uint256Field(
        default=0, help_text="The largest order delivered from the stock; a larger one takes the relay."
    )
    max_outstanding = Uint256Field(
        default=0,
        help_text="At most this much fronted and not yet swept into the vault (what a reorg could take).",
    )
    refill_chain_id = models.PositiveBigIntegerField(help_text="The chain the vault pays refills from.")
    refill_token = models.CharField(
        max_length=42, help_text="The token the vault pays refills in, on that chain."
    )
    enabled = models.BooleanField(default=True, help_text="Off: nothing is fronted and nothing refilled.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "inventories"
        constraints = [models.UniqueConstraint(fields=["chain_id", "token"], name="inventory_unique")]

    def __str__(self) -> str:
        return f"inventory of {self.token[:10]}… on chain {self.chain_id}"


class ExposureLimit(models.Model):
    """How much of one token on one chain the solver may deliver against before its payments are confirmed
    (on first sight: orders/fronting.py), on a chain whose row sets `front_confirmations`. A payment outside
    any of the limits waits for its confirmations, as every payment does where no limit is set. Amounts in
    the token's smallest unit; 0 fronts nothing on first sight."""

    chain_id = models.PositiveBigIntegerField(help_text="The chain the payments are made on.")
    token = models.CharField(
        max_length=42, help_text="The token paid (lowercase address); ERC-20 only: native payments wait."
    )
    max_payment = Uint256Field(default=0, help_text="The largest payment delivered against on first sight.")
    max_per_payer = Uint256Field(
        default=0, help_text="At most this much from one payer address within the window."
    )
    payer_window_seconds = models.PositiveIntegerField(default=3600, help_text="The per-payer window.")
    max_outstanding = Uint256Field(
        default=0,
        help_text="At most this much delivered against and not yet confirmed (what a reorg could take).",
    )
    enabled = models.BooleanField(default=True, help_text="Off: every payment waits for its confirmations.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chain_id", "token"], name="exposure_limit_unique")]

    def __str__(self) -> str:
        return f"exposure limit of {self.token[:10]}… on chain {self.chain_id}"


class InventoryFront(models.Model):
    """One order delivered from the inventory before its deposit was swept into the vault: outstanding until
    the sweep is mined (a deposit reorged out after fronting leaves it so, and opens an incident)."""

    inventory = models.ForeignKey(Inventory, on_delete=models.PROTECT, related_name="fronts")
    order = models.OneToOneField(Order, on_delete=models.PROTECT, related_name="inventory_front")
    amount = Uint256Field()
    tx = models.ForeignKey("chains.OutboxTx", on_delete=models.PROTECT, related_name="+")
    swept_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Fronted on first sight (orders/fronting.py): the payment seen before its confirmations, and how that
    # ended. Empty `payment_tx` for a front made once the deposit was counted.
    payment_chain = models.PositiveBigIntegerField(null=True, blank=True)
    payment_token = models.CharField(max_length=42, blank=True)
    payment_tx = models.CharField(max_length=66, blank=True)
    payment_block = models.BigIntegerField(null=True, blank=True)
    payer = models.CharField(max_length=42, blank=True)
    payment_amount = Uint256Field(null=True, blank=True)
    quoted_amount = Uint256Field(
        null=True,
        blank=True,
        help_text="What the payment seen bought before the service's fee, as priced then.",
    )
    covered_at = models.DateTimeField(
        null=True, blank=True, help_text="The order counted deposits covering the payment seen."
    )
    lost_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The payment seen never reached its confirmations: the operator's loss.",
    )

    class Meta:
        indexes = [
            models.Index(
                fields=["inventory"],
                condition=models.Q(swept_at__isnull=True),
                name="inventory_front_outstanding",
            ),
            models.Index(
                fields=["payment_chain", "payment_token"],
                condition=models.Q(
                    covered_at__isnull=True, lost_at__isnull=True, payment_block__isnull=False
                ),
                name="inventory_front_exposed",
            ),
        ]

    @property
    def on_sight(self) -> bool:
        return self.payment_block is not None

    def __str__(self) -> str:
        return f"{self.amount} fronted for order {self.order_id}"


class FastFill(models.Model):
    """The relay provider asked to fill a provider-routed order before the vault's deposit to it lands
    (orders/fast_fills.py): a hold of `amount` against the operator's app balance at the provider, released
    when that deposit is mined; a deposit that never lands leaves the hold the operator's loss."""

    order = models.OneToOneField(Order, on_delete=models.PROTECT, related_name="fast_fill")
    request_id = models.CharField(max_length=80)
    chain_id = models.PositiveBigIntegerField(help_text="The origin chain, where the vault's deposit goes.")
    token = models.CharField(max_length=42, help_text="The token the vault deposits (lowercase address).")
    amount = Uint256Field(help_text="The vault's deposit the fill was made against.")
    deposit_tx = models.ForeignKey("chains.OutboxTx", on_delete=models.PROTECT, related_name="+")
    accepted = models.BooleanField(default=False, help_text="The provider answered that it fills.")
    refused = models.BooleanField(
        default=False, help_text="The provider answered that it does not (no answer is neither: it may have)."
    )
    answer = models.CharField(max_length=300, blank=True, help_text="What the provider answered.")
    asked_at = models.DateTimeField(default=timezone.now)
    settled_at = models.DateTimeField(
        null=True, blank=True, help_text="The vault's deposit is mined: the hold is released."
    )
    lost_at = models.DateTimeField(
        null=True, blank=True, help_text="The deposit failed after the provider filled: the operator's loss."
    )

    class Meta:
        indexes = [
            models.Index(
                fields=["chain_id", "token"],
                condition=models.Q(settled_at__isnull=True, lost_at__isnull=True),
                name="fast_fill_held",
            )
        ]

    def __str__(self) -> str:
        return f"fast fill of order {self.order_id} ({self.request_id[:12]}…)"


class InventoryRefill(models.Model):
    """The vault paying the relay provider on `inventory.refill_chain_id` to fill the solver on the
    inventory's chain: its deposit through the outbox (`inventory:<id>:refill:<refill id>:<step>`), then the
    provider's fill, counted once the chain shows it."""

    class Status(models.TextChoices):
        DEPOSITING = "depositing"  # the quote is taken; its transactions go through the outbox
        PENDING = "pending"  # paid; the provider's fill is awaited
        FILLED = "filled"
        FAILED = "failed"  # refused, or the provider failed or refunded (its refund is in refund_tx)

    inventory = models.ForeignKey(Inventory, on_delete=models.PROTECT, related_name="refills")
    amount = Uint256Field()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DEPOSITING)
    relay = models.JSONField(
        default=dict, blank=True, help_text="The provider's quote: its steps and request id."
    )
    fill_tx = models.CharField(max_length=66, blank=True)
    refund_tx = models.CharField(max_length=66, blank=True)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["inventory", "status"], name="inventory_refill_status")]

    def __str__(self) -> str:
        return f"refill {self.pk} of {self.inventory} ({self.status})"
