"""What the webhooks hear: a customer's personal data erased (platform_api.signals.personal_data_erased)."""

from __future__ import annotations

from django.dispatch import receiver

from platform_api.signals import personal_data_erased
from webhooks.services import webhook_events_erase_personal_data


@receiver(personal_data_erased, dispatch_uid="webhooks.erase_personal_data")
def erase(sender, *, organization, session_ids, **_) -> None:
    webhook_events_erase_personal_data(organization=organization, session_ids=session_ids)
