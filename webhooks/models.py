"""Webhook endpoints, the events they subscribe to, and durable delivery records."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.dbfields import EncryptedJSONField, EncryptedTextField
from core.ids import public_id


def new_webhook_endpoint_id() -> str:
    return public_id("wh")


def new_webhook_event_id() -> str:
    return public_id("whe")  # events recorded before the events API were `wevt_`: still found by their ids


def new_delivery_id() -> str:
    return public_id("del")


class WebhookEndpoint(models.Model):
    """A merchant URL that receives signed POSTs for the event types it subscribes to."""

    id = models.CharField(primary_key=True, max_length=32, default=new_webhook_endpoint_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    url = models.URLField(max_length=2048)
    description = models.CharField(max_length=500, blank=True)
    events = models.JSONField(default=list, help_text='Event types, or ["*"] for all.')
    secret_encrypted = models.TextField(editable=False, help_text="The whsec_ secret, AES-GCM encrypted.")
    previous_secret_encrypted = models.TextField(
        blank=True,
        editable=False,
        help_text="The secret before the last rotation, still signing until it expires.",
    )
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    is_active = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=200, blank=True)
    success_count = models.PositiveIntegerField(default=0)
    failure_count = models.PositiveIntegerField(default=0)
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_attempt_failed = models.BooleanField(
        default=False, help_text="While true, at most one attempt to this endpoint is in flight at a time."
    )
    last_triggered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "is_active"], name="whendpoint_org_active")]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return f"{self.id} {self.url}"

    def subscribes_to(self, event_type: str) -> bool:
        return "*" in self.events or event_type in self.events


class WebhookEvent(models.Model):
    """An event (`checkout.expired`, `payment.completed`, ...) that happened to an organization."""

    id = models.CharField(primary_key=True, max_length=32, default=new_webhook_event_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="webhook_events"
    )
    event_type = models.CharField(max_length=64)
    data = EncryptedJSONField(
        default=dict, purpose="webhook-event", help_text="Encrypted: it may hold a payer's details."
    )
    subject = models.CharField(
        max_length=64, blank=True, help_text="The checkout session it is about, if any (for erasure)."
    )
    livemode = models.BooleanField(
        default=True,
        db_default=True,
        editable=False,
        help_text="False: it happened to a test-mode organization.",
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="whevent_org_created"),
            models.Index(
                fields=["organization", "subject"],
                condition=~models.Q(subject=""),
                name="whevent_org_subject",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.id}"


class WebhookDelivery(models.Model):
    """One event for one endpoint: the exact body sent on every attempt, and where its retries stand."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCESS = "success"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=32, default=new_delivery_id, editable=False)
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(
        WebhookEvent, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    event_type = models.CharField(max_length=64)
    body = EncryptedTextField(
        purpose="webhook-body",
        help_text="Serialized once (encrypted); the same bytes are signed and sent on every attempt.",
    )
    is_test = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a worker may (re)try; pushed ahead while an attempt is in flight.",
    )
    attempt_started_at = models.DateTimeField(
        null=True, blank=True, help_text="Set while an attempt is in flight (its lease is next_attempt_at)."
    )
    waiting_for_slot = models.BooleanField(
        default=False, help_text="Postponed because its endpoint had its most attempts in flight."
    )
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_time_ms = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="delivery_due"),
            models.Index(fields=["endpoint", "-created_at"], name="delivery_endpoint_created"),
            models.Index(fields=["endpoint", "attempt_started_at"], name="delivery_endpoint_inflight"),
            # The queue of deliveries waiting for their endpoint's next free slot (`claims.next_waiting`).
            models.Index(
                fields=["endpoint", "created_at"], condition=Q(waiting_for_slot=True), name="delivery_waiting"
            ),
        ]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.id} {self.event_type} {self.status}"


class WebhookAttempt(models.Model):
    """One HTTP attempt of a delivery: what came back, or why nothing did."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_time_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    manual = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, help_text="When the attempt started.")
    finished_at = models.DateTimeField(
        null=True, blank=True, help_text="Empty while in flight, or if cut off."
    )

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="attempt_delivery_number")]


def new_notification_id() -> str:
    return public_id("ntf")


class NotificationEmail(models.Model):
    """An email to the merchant about an event: written with the event, sent by a worker, retried on failure."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=32, default=new_notification_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="notification_emails"
    )
    event = models.ForeignKey(
        WebhookEvent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    event_type = models.CharField(max_length=64)
    to_address = EncryptedTextField(purpose="notification")
    subject = models.CharField(max_length=200)
    body = EncryptedTextField(purpose="notification", help_text="Encrypted: it may hold a payer's details.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="notification_due")]

    def __str__(self) -> str:
        return f"{self.id} {self.event_type} {self.status}"


def new_notification_settings_id() -> str:
    return public_id("ns")


class NotificationSettings(models.Model):
    """Which events email the merchant, and where."""

    id = models.CharField(
        primary_key=True, max_length=32, default=new_notification_settings_id, editable=False
    )
    organization = models.OneToOneField(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="notification_settings"
    )
    email_enabled = models.BooleanField(default=False)
    email_address = models.EmailField(blank=True)
    enabled_events = models.JSONField(default=list, blank=True, help_text="Webhook event types.")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "platform_api_notificationsettings"
        verbose_name_plural = "notification settings"

    def __str__(self) -> str:
        return f"{self.organization_id}: {self.email_address or '-'}"
