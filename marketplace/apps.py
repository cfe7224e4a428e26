from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Cluster marketplace"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Celery tasks in every process (web, worker, commands):
        # services enqueue them by name and never import this module.
        from marketplace.lab import tasks as lab_tasks  # noqa: F401
        from marketplace.market import tasks as market_tasks  # noqa: F401
