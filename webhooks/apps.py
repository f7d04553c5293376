from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self):
        from platform_api.signals import personal_data_erased
        from webhooks.services import webhook_events_erase_personal_data

        def erase(sender, *, organization, session_ids, **_):
            webhook_events_erase_personal_data(organization=organization, session_ids=session_ids)

        personal_data_erased.connect(erase, dispatch_uid="webhooks.erase_personal_data", weak=False)
