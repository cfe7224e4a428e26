from django.apps import AppConfig


class MarketplaceConfig(AppConfig):
    name = "marketplace"
    verbose_name = "Cluster marketplace"
    default_auto_field = "django.db.models.BigAutoField"
