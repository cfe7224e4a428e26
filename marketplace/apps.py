from django.apps import AppConfig

from marketplace.market.hooks import MarketPart


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Cluster marketplace"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Celery tasks in every process (web, worker, commands):
        # services enqueue them by name and never import this module.
        # The parts plug into the core through one surface (market.hooks.MarketPart), loaded from
        # settings.MARKET_PARTS in that order: load them now, so a wrong path fails at start.
        import marketplace.dashboard.tasks
        import marketplace.lab.tasks
        import marketplace.market.tasks  # noqa: F401
        from marketplace.market import hooks

        hooks.reload_parts()


class LedgerPart(MarketPart):
    """The ledger's part, built here in the glue: the ledger sits below the core and imports none of it,
    so it cannot subclass the core's ``MarketPart`` itself. Its sweep work purges expired idempotency
    keys (``ledger.hooks.sweep_work``)."""

    name = "ledger"

    def sweep_work(self) -> list[int]:
        from marketplace.ledger.hooks import sweep_work  # models: only once the app registry is ready

        return sweep_work()
