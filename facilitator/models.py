"""What the x402 facilitator keeps: one row per EIP-3009 authorization it was asked to settle."""

from __future__ import annotations

import uuid

from django.db import models

from chains.keys import OwnerKind, Step, outbox_key
from core.dbfields import Uint256Field


class Settlement(models.Model):
    """An authorization (a payer's signed `transferWithAuthorization`) the facilitator settles, at most once:
    one row per (chain, token, payer, nonce), one outbox transaction per row (`x402:<id>:settle`). Settling the
    same payload again reads this row; one that someone else submitted first is recorded with their
    transaction (`submitted_by_us` false)."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"  # asked of the outbox, not in a block yet
        INCLUDED = "included", "in a block"  # in a block and successful there; not yet confirmed
        SETTLED = "settled", "settled"  # confirmed
        FAILED = "failed", "failed"  # not sent (it would revert) or reverted: nothing moved

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.PROTECT, related_name="x402_settlements"
    )
    api_key = models.ForeignKey(
        "platform_api.ApiKey", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    x402_version = models.PositiveSmallIntegerField()
    chain_id = models.PositiveBigIntegerField()
    token = models.CharField(max_length=42, help_text="EIP-55 checksummed.")
    payer = models.CharField(max_length=42, help_text="The authorization's `from`, checksummed.")
    pay_to = models.CharField(max_length=42, help_text="The authorization's `to`, checksummed.")
    value = Uint256Field()
    valid_after = Uint256Field()
    valid_before = Uint256Field()
    nonce = models.CharField(max_length=66, help_text="0x and 64 lowercase hex digits.")
    signature = models.TextField(help_text="0x and hex, as the payer signed.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    submitted_by_us = models.BooleanField(default=True)
    tx_hash = models.CharField(max_length=66, blank=True)
    block_number = models.PositiveBigIntegerField(null=True, blank=True)
    error_reason = models.CharField(max_length=80, blank=True, help_text="The x402 reason, when it failed.")
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["chain_id", "token", "payer", "nonce"], name="x402_one_settlement_per_authorization"
            )
        ]
        indexes = [models.Index(fields=["organization", "-created_at"], name="x402_org_created")]

    def __str__(self) -> str:
        return f"x402 {self.payer} -> {self.pay_to} {self.value} on {self.chain_id} ({self.status})"

    @property
    def outbox_key(self) -> str:
        return outbox_key(OwnerKind.X402, self.pk, Step.SETTLE)

    @property
    def network(self) -> str:
        return f"eip155:{self.chain_id}"


class PayerTurn(models.Model):
    """One row per chain, token and payer that the facilitator settled for: taken (updated) in the
    transaction that records a settlement, so that two settlements of one payer's tokens are recorded one
    after the other, each counting what the other has in flight."""

    chain_id = models.PositiveBigIntegerField()
    token = models.CharField(max_length=42)
    payer = models.CharField(max_length=42)
    taken_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chain_id", "token", "payer"], name="x402_one_turn_per_payer")
        ]

    def __str__(self) -> str:
        return f"{self.payer}'s turn for {self.token} on {self.chain_id}"
