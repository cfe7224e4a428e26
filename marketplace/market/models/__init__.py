"""The core's models, one module per subject (the app's ``marketplace/models.py`` registers them)."""

from marketplace.market.models.tenants import Tenant

__all__ = ["Tenant"]
