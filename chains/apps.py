from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save


class ChainsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "chains"
    verbose_name = "Chains"

    def ready(self) -> None:
        from chains import factory  # noqa: F401 - registers the handler of its own transactions
        from chains.models import Chain, Token
        from chains.registry import registry_forget
        from chains.tokens import tokens_forget

        def forget(**kwargs) -> None:
            registry_forget()

        post_save.connect(forget, sender=Chain, dispatch_uid="chains.registry.saved", weak=False)
        post_delete.connect(forget, sender=Chain, dispatch_uid="chains.registry.deleted", weak=False)
        post_save.connect(tokens_forget, sender=Token, dispatch_uid="chains.tokens.saved", weak=False)
        post_delete.connect(tokens_forget, sender=Token, dispatch_uid="chains.tokens.deleted", weak=False)
        post_migrate.connect(_seed_chains, sender=self, dispatch_uid="chains.registry.seed")


def _seed_chains(*, using: str = "default", **kwargs) -> None:
    """After `migrate` (and a test database's flush): the CHAINS seed, imported idempotently."""
    from chains.registry import chains_seed

    if using == "default":
        chains_seed()
