"""Tenants: a login, and the leaf queue its jobs go to by default (the core's; the ledger keeps their money)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models

from marketplace.infra.locking import NoKeyLockManager
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue


class Tenant(models.Model):
    """A tenant of the cluster: a login, and the leaf queue its jobs go to by default."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tenant")
    # no index of its own: the unique constraint below leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="tenants", db_index=False)
    name = models.CharField(max_length=100)
    default_queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="tenants")

    objects = NoKeyLockManager()  # row locks: FOR NO KEY UPDATE (infra.locking)

    class Meta:
        ordering: ClassVar[list[str]] = ["name"]
        constraints = (models.UniqueConstraint(fields=["market", "name"], name="tenant_unique_name"),)

    def __str__(self) -> str:
        return self.name
