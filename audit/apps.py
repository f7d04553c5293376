from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit log"

    def ready(self):
        from audit.services import audit_event_record
        from platform_api.signals import resource_written

        def record(sender, *, ctx, event_type, resource_type, resource_id, created, **_):
            audit_event_record(
                ctx=ctx,
                event_type=event_type,
                resource_type=resource_type,
                resource_id=resource_id,
                created=created,
            )

        resource_written.connect(record, dispatch_uid="audit.record", weak=False)
