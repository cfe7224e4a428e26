from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Cluster marketplace"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Celery tasks in every process (web, worker, commands):
        # services enqueue them by name and never import this module.
        # The parts plug into the core's clearing, tick and sweeper (market.hooks): the core names no part.
        from marketplace.deadlines import hooks as deadline_hooks
        from marketplace.lab import hooks as lab_hooks
        from marketplace.lab import tasks as lab_tasks  # noqa: F401
        from marketplace.ledger import hooks as ledger_hooks
        from marketplace.market import hooks
        from marketplace.market import tasks as market_tasks  # noqa: F401
        from marketplace.pools import hooks as pool_hooks
        from marketplace.reservations import hooks as reservation_hooks

        # The ledger sits below the core and imports none of it: the glue registers its sweep work.
        hooks.register(part="ledger", sweep_work=ledger_hooks.sweep_work)
        for part in (reservation_hooks, deadline_hooks, pool_hooks, lab_hooks):
            part.register()
