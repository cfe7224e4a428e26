"""Utility functions a tenant adopted from a fit of its past jobs (paper 000, Sec. 5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from django.conf import settings
from django.db import models

from marketplace.market.models.jobs import Job
from marketplace.market.models.tenants import Tenant


class AdoptedUtility(models.Model):
    """The fitted weights a tenant chose to bid with for one job class.

    ``weights`` maps resource type name -> w >= 0 (the fit's, as adopted); new bids
    of the class that ask for it get these weights and ``utility`` instead of the
    entered ones. ``jobs`` and ``spread`` record the fit's evidence at adoption.
    """

    # no index of its own: the unique constraint below leads with it
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="adopted_utilities", db_index=False)
    job_class = models.CharField(max_length=120)
    utility = models.CharField(max_length=10, choices=Job.Utility.choices)
    weights = models.JSONField(help_text="resource type name -> fitted weight w >= 0")
    spread = models.JSONField(help_text="resource type name -> bootstrap std of the normalised weight")
    jobs = models.PositiveIntegerField(help_text="Completed jobs behind the fit (k >= m).")
    adopted_at = models.DateTimeField(auto_now=True)
    adopted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering: ClassVar[list[str]] = ["tenant_id", "job_class"]
        constraints = (models.UniqueConstraint(fields=["tenant", "job_class"], name="adopted_utility_unique_class"),)

    def __str__(self) -> str:
        return f"{self.tenant} / {self.job_class}: {self.utility} {self.weights}"


@dataclass(frozen=True)
class WorkItem:
    """A job's work on one resource type (by name): tasks x duration, and the utility weight."""

    resource_type: str
    tasks: int
    task_duration: float
    weight: float = 1.0
