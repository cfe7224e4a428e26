"""The simulation lab: a study is one workload and cluster under several market configurations.

Each configuration (and seed) is an :class:`~marketplace.models.ExperimentRun`
of the registered ``simulation`` experiment (``simulator.experiments.simulation``)
linked to its study, so runs share the experiments framework's claim,
progress, heartbeat, cancel and reap; the study holds what they share and the
gathered comparison table.
"""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models


class SimulationStudy(models.Model):
    """A what-if: one workload (trace slice or the live market's recent jobs), one
    cluster, configurations swept over one parameter and seeds."""

    class Kind(models.TextChoices):
        TRACE = "trace", "trace replay"
        LIVE = "live", "live market replay"

    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.TRACE)
    workload = models.JSONField(default=dict, help_text="Flat workload parameters of the simulation experiment.")
    capacity = models.JSONField(default=list, help_text="Slots per resource type.")
    base = models.JSONField(default=dict, help_text="Configuration shared by every run (registry names, alpha, T_wait).")
    vary = models.CharField(max_length=40, blank=True, default="", help_text="The swept parameter ('' = one configuration).")
    market = models.ForeignKey("marketplace.Market", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    live = models.JSONField(null=True, blank=True, help_text="What the live market did over the replayed period.")
    summary = models.JSONField(null=True, blank=True, help_text="Gathered table (simulator.whatif.compare.summary_table).")
    gathered_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        verbose_name_plural = "simulation studies"

    def __str__(self) -> str:
        return f"{self.title} #{self.pk}"
