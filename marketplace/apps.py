from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Cluster marketplace"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Celery tasks in every process (web, worker, commands):
        # services enqueue them by name and never import this module.
        # The parts plug into the core's clearing, tick and sweeper (market.hooks): the core names no part.
        import marketplace.deadlines.hooks
        import marketplace.lab.hooks
        import marketplace.lab.tasks
        import marketplace.market.tasks
        import marketplace.pools.hooks
        import marketplace.reservations.hooks

        for part in (marketplace.reservations, marketplace.deadlines, marketplace.pools, marketplace.lab):
            part.hooks.register()
