from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Cluster marketplace"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Celery tasks in every process (web, worker, commands):
        # services enqueue them by name and never import this module.
        # The parts plug into the core through one surface (market.hooks.MarketPart), loaded from
        # settings.MARKET_PARTS in that order: load them now, so a wrong path fails at start.
        from marketplace.lab import tasks as lab_tasks  # noqa: F401
        from marketplace.market import hooks
        from marketplace.market import tasks as market_tasks  # noqa: F401

        hooks.reload_parts()
