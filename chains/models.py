"""What chains keep: the token registry, and for the deposit watcher one cursor per chain, the addresses it
watches and the deposits it saw."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from chains.keys import Funds, Signer, Step, TxKey, key_columns, tx_key
from core.dbfields import EncryptedJSONField, Uint256Field


class Chain(models.Model):
    """A chain the service knows: how to reach it, how long to wait for confirmations, and whether it takes
    payments. The registry (chains/registry.py) reads these rows; CHAINS in the environment seeds them.

    Its RPC URLs are encrypted at rest: a provider's URL usually carries its API key.
    """

    class Source(models.TextChoices):
        SEED = "seed", "the CHAINS seed (kept in step with it)"
        STAFF = "staff", "staff (the seed leaves it alone)"

    class Family(models.TextChoices):
        """How the service talks to a chain: its addresses, deposit addresses, scans, transactions and
        receipts (chains.families). Every chain today is an EVM chain."""

        EVM = "evm", "EVM"

    chain_id = models.PositiveBigIntegerField(primary_key=True)
    name = models.CharField(max_length=100)
    family = models.CharField(
        max_length=16,
        choices=Family.choices,
        default=Family.EVM,
        db_default=Family.EVM,
        help_text="How the service talks to it (chains.families); every chain today is an EVM chain.",
    )
    native_symbol = models.CharField(max_length=16)
    native_decimals = models.PositiveSmallIntegerField(default=18)
    rpc_urls = EncryptedJSONField(
        purpose="rpc", default=list, blank=True, help_text="JSON-RPC URLs, in order of preference."
    )
    confirmations = models.PositiveIntegerField(default=12)
    front_confirmations = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="The confirmations after which the solver may deliver a payment from its inventory, within "
        "the exposure limits (1: the payment in its block); empty: the chain's confirmations, as for counting.",
    )
    poll_interval_seconds = models.FloatField(default=12)
    explorer_url = models.URLField(max_length=300, blank=True)
    factory_address = models.CharField(
        max_length=42, blank=True, help_text="The DepositFactory here (EIP-55); none: no payments."
    )
    takes_payments = models.BooleanField(
        default=True,
        help_text="Offered to payers (it needs a factory). Off: what is in flight still settles.",
    )
    devnet = models.BooleanField(default=False)
    testnet = models.BooleanField(
        default=False,
        db_default=False,
        help_text="A public test network (Sepolia, Base Sepolia...): test-mode organizations may use it, as "
        "they may the devnets; live ones may too.",
    )
    max_fee_per_gas_gwei = models.FloatField(
        default=0, help_text="The most the outbox bids per gas here; 0: OUTBOX_MAX_FEE_PER_GAS_GWEI."
    )
    max_lag_blocks = models.PositiveIntegerField(
        default=10, help_text="A node further than this behind the best head is set aside."
    )
    traces = models.BooleanField(
        default=False, help_text="Its RPC offers trace_block: the sender of a contract's native payment."
    )
    vault_gas_threshold = Uint256Field(
        default=0, help_text="Warn below this native balance of the vault, in wei; 0: never."
    )
    solver_gas_threshold = Uint256Field(
        default=0, help_text="Warn below this native balance of the solver, in wei; 0: never."
    )
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.STAFF)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["chain_id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(poll_interval_seconds__gt=0), name="chain_poll_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(max_fee_per_gas_gwei__gte=0), name="chain_fee_cap_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.chain_id})"

    def save(self, *args, **kwargs) -> None:
        self.updated_at = timezone.now()  # what tells every process's registry that the row changed
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "updated_at"}
        super().save(*args, **kwargs)


class Token(models.Model):
    """A token the service knows on one chain, from the shipped token list."""

    chain_id = models.PositiveBigIntegerField()
    address = models.CharField(
        max_length=42, help_text="EIP-55 checksummed; the zero address is the native asset."
    )
    symbol = models.CharField(max_length=32)
    name = models.CharField(max_length=100)
    decimals = models.PositiveSmallIntegerField()
    logo_uri = models.URLField(max_length=500, blank=True)
    usd_price = models.DecimalField(
        max_digits=30,
        decimal_places=10,
        null=True,
        blank=True,
        help_text="Reference price used by the offline quoter.",
    )
    eip3009 = models.BooleanField(
        "takes EIP-3009",
        default=False,
        help_text="Its contract has transferWithAuthorization (as USDC): payers may pay it by signature, without gas "
        "(x402, the hosted page).",
    )
    eip712_name = models.CharField(
        "EIP-712 domain name",
        max_length=100,
        blank=True,
        help_text="The name of its EIP-712 domain, which signatures commit to (real USDC: USD Coin).",
    )
    eip712_version = models.CharField(
        "EIP-712 domain version",
        max_length=20,
        blank=True,
        help_text="The version of its EIP-712 domain (real USDC: 2).",
    )

    class Meta:
        ordering = ["chain_id", "symbol"]
        constraints = [
            models.UniqueConstraint(fields=["chain_id", "address"], name="token_chain_address"),
            models.CheckConstraint(
                condition=Q(eip3009=False) | (~Q(eip712_name="") & ~Q(eip712_version="")),
                name="token_eip3009_has_domain",
                violation_error_message="A token that takes EIP-3009 needs its EIP-712 domain name and version.",
            ),
        ]
        indexes = [models.Index(fields=["chain_id", "symbol"], name="token_chain_symbol")]

    def __str__(self) -> str:
        return f"{self.symbol} on {self.chain_id}"

    def clean(self) -> None:
        if self.eip3009:
            missing = {
                field: "A token that takes EIP-3009 needs this: signatures commit to its EIP-712 domain."
                for field in ("eip712_name", "eip712_version")
                if not getattr(self, field)
            }
            if missing:
                raise ValidationError(missing)


class ChainCursor(models.Model):
    """How far the watcher of one chain has read, and how that went."""

    chain_id = models.PositiveBigIntegerField(primary_key=True)
    scanned_to = models.BigIntegerField(
        default=-1, help_text="The last block read (confirmed); -1 before the first."
    )
    scanned_hash = models.CharField(
        max_length=66, blank=True, help_text="That block's hash: another hash there later means a reorg."
    )
    head = models.BigIntegerField(null=True, blank=True, help_text="The chain's head at the last scan.")
    sighted_to = models.BigIntegerField(
        default=-1,
        db_default=-1,
        help_text="The last block read on first sight (above the confirmed ones: chains.watcher.sight).",
    )
    leased_until = models.DateTimeField(null=True, blank=True, help_text="Set while a scan runs.")
    last_scan_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    nodes = models.JSONField(
        default=list, blank=True, help_text="Each RPC node as the last scan found it (scheme and host only)."
    )
    gas = models.JSONField(
        default=dict, blank=True, help_text="The service's signers' native balances (wei) at the last scan."
    )

    def __str__(self) -> str:
        return f"chain {self.chain_id} at block {self.scanned_to}"

    @property
    def lag(self) -> int | None:
        return self.head - self.scanned_to if self.head is not None else None


class WatchedAddress(models.Model):
    """A deposit address the watcher reads for, and whose business what arrives there is (`owner`)."""

    chain_id = models.PositiveBigIntegerField()
    address = models.CharField(max_length=42, help_text="EIP-55 checksummed.")
    owner = models.CharField(max_length=80, help_text='Handed to the deposit handler, e.g. "order:<id>".')
    watch_until = models.DateTimeField()
    native_balance = Uint256Field(
        null=True,
        blank=True,
        help_text="Its native balance at the watcher's cursor; none: read it at the next scan.",
    )
    look_back_from = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="A block the watcher's cursor may have passed before the address was watched: the next "
        "scan reads its token transfers from there to the cursor, then clears this.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "watched addresses"
        constraints = [models.UniqueConstraint(fields=["chain_id", "address"], name="watched_chain_address")]
        indexes = [models.Index(fields=["chain_id", "watch_until"], name="watched_chain_until")]

    def __str__(self) -> str:
        return f"{self.address} on {self.chain_id} ({self.owner})"


class Deposit(models.Model):
    """A confirmed transfer to a watched address, of any token: recorded once, then handed to its owner.

    A transfer is named by its transaction and its place among that transaction's transfers of the same
    token to the same address (`seq`), not by its log index, which counts within a block: a transaction
    that a reorg moves to another block is the same deposit, never a second one.
    """

    class Status(models.TextChoices):
        CONFIRMED = "confirmed", "confirmed"
        ORPHANED = "orphaned", "orphaned (its block left the chain; waiting to see it again)"
        WITHDRAWN = "withdrawn", "withdrawn (not seen again after a reorg)"
        UNLISTED = "unlisted", "unlisted token (held for staff, never swept or refunded)"

    chain_id = models.PositiveBigIntegerField()
    tx_hash = models.CharField(max_length=66)
    seq = models.PositiveIntegerField(
        default=0, help_text="Its place among the transaction's transfers of this token to this address."
    )
    log_index = models.IntegerField(
        help_text="The Transfer log's index in the block that carries it; -1 for a native-coin transfer."
    )
    block_number = models.BigIntegerField()
    block_hash = models.CharField(max_length=66)
    from_address = models.CharField(max_length=42)
    to_address = models.CharField(max_length=42)
    token = models.CharField(max_length=42, help_text="The token contract; the zero address for native coin.")
    amount = models.CharField(
        max_length=78, help_text="In the token's smallest unit (uint256, decimal digits)."
    )
    owner = models.CharField(max_length=80)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CONFIRMED)
    orphaned_at_block = models.BigIntegerField(
        null=True, blank=True, help_text="The head when its block was found gone; withdrawn after the grace."
    )
    handled_at = models.DateTimeField(null=True, blank=True)
    handler_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["chain_id", "block_number", "log_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["chain_id", "tx_hash", "to_address", "token", "seq"], name="deposit_chain_tx_transfer"
            )
        ]
        indexes = [
            models.Index(fields=["owner"], name="deposit_owner"),
            # What `retry_unhandled_deposits` reads every minute: only the few rows still unhandled.
            models.Index(
                fields=["created_at"], condition=models.Q(handled_at__isnull=True), name="deposit_unhandled"
            ),
            # What a reorg check reads: a chain's deposits in the last blocks.
            models.Index(fields=["chain_id", "block_number"], name="deposit_chain_block"),
            models.Index(fields=["chain_id"], condition=models.Q(status="orphaned"), name="deposit_orphaned"),
        ]

    def __str__(self) -> str:
        return f"{self.amount} of {self.token} to {self.to_address} ({self.tx_hash})"


class SenderNonce(models.Model):
    """The next nonce of one of the service's signers on one chain; locked while a transaction takes it."""

    chain_id = models.PositiveBigIntegerField()
    address = models.CharField(max_length=42, help_text="EIP-55 checksummed.")
    next_nonce = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chain_id", "address"], name="sender_nonce_chain_address")
        ]

    def __str__(self) -> str:
        return f"{self.address} on {self.chain_id}: next nonce {self.next_nonce}"


class OutboxTx(models.Model):
    """One on-chain transaction the service sends, once per business key (chains/outbox.py)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued (not signed yet)"
        SIGNED = "signed", "signed (nonce taken, raw transaction stored)"
        BROADCAST = "broadcast", "broadcast (waiting to be mined)"
        MINED = "mined", "mined and succeeded"
        FAILED = "failed", "failed (reverted, or would revert)"

    key = models.CharField(
        max_length=120, unique=True, help_text='What it is for (chains.keys), e.g. "order:<uuid>:sweep".'
    )
    # The key taken apart once, when the row is created (chains.keys): what readers filter and the ledger
    # books by, never words of the key.
    owner = models.CharField(max_length=120, blank=True, help_text='Whose transaction it is: "order:<uuid>".')
    step = models.CharField(
        max_length=20,
        blank=True,
        choices=[(s.value, s.value) for s in Step],
        help_text="What it does for its owner.",
    )
    funds = models.CharField(
        max_length=10,
        blank=True,
        choices=[(f.value, f.value) for f in Funds],
        help_text="Whose money it moves, besides the service's own addresses.",
    )
    chain_id = models.PositiveBigIntegerField()
    signer = models.CharField(
        max_length=20,
        choices=[(s.value, s.value) for s in Signer],
        help_text="The signing role (chains.keys.Signer).",
    )
    sender = models.CharField(max_length=42)
    to = models.CharField(max_length=42)
    data = models.TextField(blank=True, help_text="Calldata, 0x-hex.")
    value = Uint256Field(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    nonce = models.BigIntegerField(null=True, blank=True)
    gas_limit = models.BigIntegerField(null=True, blank=True)
    max_fee_per_gas = Uint256Field(null=True, blank=True)
    max_priority_fee_per_gas = Uint256Field(null=True, blank=True)
    raw_tx = models.TextField(blank=True, help_text="The signed transaction last broadcast, 0x-hex.")
    tx_hash = models.CharField(max_length=66, blank=True, help_text="The hash of the last signed version.")
    hashes = models.JSONField(default=list, help_text="Every signed version's hash (fee bumps re-sign).")
    broadcasts = models.PositiveIntegerField(default=0)
    block_number = models.BigIntegerField(null=True, blank=True)
    block_hash = models.CharField(max_length=66, blank=True)
    gas_used = models.BigIntegerField(null=True, blank=True)
    effective_gas_price = Uint256Field(
        null=True, blank=True, help_text="Wei per gas the sender paid (the receipt's effectiveGasPrice)."
    )
    logs = models.JSONField(
        default=list, blank=True, help_text="The receipt's logs ({address, topics, data}): what it moved."
    )
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    signed_at = models.DateTimeField(null=True, blank=True)
    broadcast_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # What the poller reads: only the transactions still in flight.
            models.Index(
                fields=["chain_id", "created_at"],
                condition=models.Q(status__in=["queued", "signed", "broadcast"]),
                name="outbox_in_flight",
            ),
            # What an owner's pages and settlements read: its transactions.
            models.Index(fields=["owner", "created_at"], name="outbox_owner"),
            # What the reorg check reads: the transactions finished in a chain's last blocks.
            models.Index(fields=["chain_id", "block_number"], name="outbox_chain_block"),
            # What a metrics scrape counts (observability.collector): the few that failed.
            models.Index(
                fields=["chain_id", "signer"], condition=models.Q(status="failed"), name="outbox_failed"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.status})"

    def save(self, *args, **kwargs) -> None:
        if not self.owner and self.key:  # every way a row is created goes through here
            for name, value in key_columns(self.key, self.signer).items():
                setattr(self, name, value)
        super().save(*args, **kwargs)

    @property
    def parsed_key(self) -> TxKey:
        """The business key taken apart (chains.keys)."""
        return tx_key(self.key)

    @property
    def in_flight(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.SIGNED, self.Status.BROADCAST)


class AdoptedTx(models.Model):
    """A transaction one of the service's signers sent that the database did not hold when it was found on
    the chain (chains/outbox/adopt.py): signed after the backup the database was restored from, or by the
    key used elsewhere. Kept with what it did, and the outbox key that took it as its own, if any."""

    chain_id = models.PositiveBigIntegerField()
    sender = models.CharField(max_length=42)
    signer = models.CharField(max_length=20)
    nonce = models.BigIntegerField()
    tx_hash = models.CharField(max_length=66)
    to = models.CharField(max_length=42, blank=True, help_text="Empty for a contract creation.")
    data = models.TextField(blank=True)
    value = Uint256Field(default=0)
    raw_tx = models.TextField(blank=True)
    block_number = models.BigIntegerField()
    found_at = models.DateTimeField(default=timezone.now)
    claimed_by = models.CharField(
        max_length=120,
        blank=True,
        help_text="The outbox key that took it as its transaction; empty: none yet.",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["chain_id", "sender", "nonce"]
        constraints = [
            models.UniqueConstraint(fields=["chain_id", "sender", "nonce"], name="adopted_chain_sender_nonce")
        ]
        indexes = [
            # What a new outbox key asks (send.outbox_submit): one unclaimed with the same effect.
            models.Index(
                fields=["chain_id", "sender", "to"],
                condition=models.Q(claimed_by=""),
                name="adopted_unclaimed",
            )
        ]

    def __str__(self) -> str:
        return f"{self.sender} nonce {self.nonce} on {self.chain_id}: {self.claimed_by or 'unclaimed'}"


class Incident(models.Model):
    """Something about money that staff must look at: what the service will not decide alone.

    Recorded once per (kind, subject) and logged at ERROR. An open incident about an order
    (`order:<id>`) holds its settlement: nothing more is sent for it until staff resolve it.
    """

    class Kind(models.TextChoices):
        DEPOSIT_REORGED = "deposit_reorged", "a deposit that was counted left the chain"
        FRONT_LOST = "front_lost", "a payment delivered on first sight never reached its confirmations"
        DEPOSIT_RETURNED = "deposit_returned", "a withdrawn deposit came back on the chain"
        UNLISTED_TOKEN = "unlisted_token", "a transfer of a token the service does not list"
        SWEEP_SHORT = "sweep_short", "a sweep moved less than was counted"
        TX_REORGED = "tx_reorged", "a transaction of the service left the chain"
        FEE_CAP = "fee_cap", "a transaction's fee reached the chain's cap"
        BALANCE_ANOMALY = "balance_anomaly", "a watched balance fell by more than the service moved"
        UNATTRIBUTED = "unattributed", "a deposit to refund whose sender is unknown"
        TX_ADOPTED = "tx_adopted", "transactions of the service's signers its database did not hold"
        RELAY_HELD = "relay_held", "the relay provider holds a deposit it neither filled nor refunded"
        FAST_FILL_LOST = "fast_fill_lost", "a fast fill whose vault deposit never landed"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    subject = models.CharField(
        max_length=200, help_text='What it is about, e.g. "order:<id>", "deposit:<id>".'
    )
    chain_id = models.PositiveBigIntegerField(null=True, blank=True)
    summary = models.CharField(max_length=500)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["kind", "subject"], name="incident_kind_subject")]
        indexes = [
            models.Index(
                fields=["subject"], condition=models.Q(resolved_at__isnull=True), name="incident_open"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.subject}"
