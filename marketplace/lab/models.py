"""Background runs of registered experiments (``simulator.experiments``)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models


class ExperimentRun(models.Model):
    """One run of a registered experiment: its parameters, progress and result.

    ``status`` moves queued -> running -> done | failed | cancelled, each move a
    conditional UPDATE (``services.experiments``), so a duplicate task delivery
    cannot run it twice. ``heartbeat_at`` is touched with every progress
    update; a run whose heartbeat is older than ``EXPERIMENT_STALE_S`` is
    marked failed by ``experiment_reap`` (its worker died).

    Retries: a run may be tried ``max_attempts`` times (1 for the paper
    experiments, ``SIMULATION_MAX_ATTEMPTS`` for simulation-lab runs). A failed
    or reaped attempt with attempts left goes back to queued with ``retry_at``
    set (exponential backoff); ``enqueued_at`` is when its task last reached
    the broker, None while it has to be (re)published, which the sweeper
    (``experiment_requeue``) does for runs whose publication failed or whose
    retry is due.

    Parts (``services.experiments``, experiments that declare ``shards``): a run
    split for the workers is a *parent* with one child run per part (``parent``,
    ``part_index`` 0..n-1, ``label`` its own parameters); each child is a task of
    its own, and the parent, never run by a worker, is combined from its children's
    results when the last one is done. ``worker`` is the Celery worker (host name)
    of a run's last attempt.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    name = models.CharField(max_length=60, db_index=True, help_text="simulator.experiments registry name")
    params = models.JSONField(default=dict, help_text="The parameters used (defaults overlaid with the request's).")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress = models.FloatField(default=0.0, help_text="Fraction done, 0 to 1.")
    message = models.CharField(max_length=200, blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True, help_text="figures, tables, summary (see simulator.experiments)")
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    study = models.ForeignKey(
        "marketplace.SimulationStudy", null=True, blank=True, on_delete=models.CASCADE, related_name="runs",
        help_text="The simulation-lab study this run is one configuration of.",
    )
    label = models.CharField(max_length=120, blank=True, default="", help_text="The configuration inside its study (without the seed).")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker has started this run.")
    max_attempts = models.PositiveSmallIntegerField(default=1, help_text="Attempts allowed before the run is failed for good.")
    enqueued_at = models.DateTimeField(null=True, blank=True, help_text="When its task last reached the broker (None: to publish).")
    retry_at = models.DateTimeField(null=True, blank=True, help_text="A failed attempt's retry is not published before this.")
    # no index of its own: the unique constraint below leads with it
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="parts", db_index=False,
        help_text="The split run this run is one part of (None: a run of its own, or a parent).",
    )
    part_index = models.PositiveIntegerField(null=True, blank=True, help_text="Position among its parent's parts (0-based).")
    worker = models.CharField(max_length=120, blank=True, default="", help_text="The worker (Celery host name) of its last attempt.")

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(condition=models.Q(progress__gte=0.0, progress__lte=1.0), name="experiment_progress_0_1"),
            models.UniqueConstraint(fields=["parent", "part_index"], name="experiment_part_once"),
        ]

    def __str__(self) -> str:
        return f"{self.name} #{self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in {self.Status.DONE, self.Status.FAILED, self.Status.CANCELLED}


class SimulationStudy(models.Model):
    """A what-if: one workload (trace slice or the live market's recent jobs), one
    cluster, configurations swept over one parameter and seeds."""

    class Kind(models.TextChoices):
        TRACE = "trace", "trace replay"
        LIVE = "live", "live market replay"

    class Check(models.TextChoices):
        NONE = "", "not needed"
        CHECKING = "checking", "checking"
        PASSED = "passed", "passed"
        REFUSED = "refused", "refused"

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
    trace_name = models.CharField(max_length=200, blank=True, default="",
                                  help_text="The trace as the pages show it (a file name, never a server path).")
    check_status = models.CharField(max_length=10, blank=True, default="", choices=Check.choices,
                                    help_text="An uploaded trace's check on a worker (services.uploads); its runs wait for it.")
    check_message = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        verbose_name_plural = "simulation studies"

    def __str__(self) -> str:
        return f"{self.title} #{self.pk}"
