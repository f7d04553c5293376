from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ChainsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "chains"
    verbose_name = "Chains"

    def ready(self) -> None:
        # The handlers of its own transactions (chains.factory, chains.outbox.repair's nonce fillers); the caches of chain and token rows, forgotten
        # when a row changes (receivers in chains.registry and chains.tokens).
        from chains import (  # noqa: F401
            factory,
            metrics,
            registry,
            tokens,
        )
        from chains.outbox import repair  # noqa: F401

        # Django connects post_migrate to the app's own config, so this one stays a call (Django's docs).
        post_migrate.connect(_seed_chains, sender=self, dispatch_uid="chains.registry.seed")


def _seed_chains(*, using: str = "default", **kwargs) -> None:
    """After `migrate` (and a test database's flush): the CHAINS seed, imported idempotently."""
    from chains.registry import chains_seed

    if using == "default":
        chains_seed()
