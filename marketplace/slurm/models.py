"""What the market sent to Slurm and what Slurm said back: one row per task, one per advance
reservation, one status row per market.

A task's row is written in the clock tick that started it (the engine's launch, under the market
row lock), so the decision and the record of it commit together; the submission happens after the
commit (``services.dispatch.slurm_dispatch``) and is idempotent by the batch's key, which Slurm carries in
the job's comment: a dispatcher killed between ``sbatch`` and its own update finds the job by that
key and does not submit it twice.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q


class SlurmTask(models.Model):
    """One task of a market job as Slurm runs it: one element of the array submitted for its batch.

    ``batch_key`` is the engine's batch key (``simulator.cluster``); ``key`` (the array's idempotency
    key, in its ``--comment``) is ``mkt<market>-<token>-t<pk of the batch's first row>``, unique for good
    even when an engine restarts its batch numbering, and apart from another database's keys on the
    same Slurm (``SlurmStatus.token``). ``sim_start`` and ``duration`` are simulated seconds;
    ``submitted_at`` .. ``ended_at`` are wall-clock times Slurm reported.
    """

    class State(models.TextChoices):
        NEW = "new", "Decided, not yet submitted"
        SUBMITTING = "submitting", "Claimed by a dispatcher, sbatch under way"
        SUBMITTED = "submitted", "Submitted (pending in Slurm)"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed (non-zero exit, node failure or time limit)"
        LOST = "lost", "Lost (Slurm no longer knows it)"
        CANCELLING = "cancelling", "Cancelled by the market, scancel pending"
        CANCELLED = "cancelled", "Cancelled"

    ENDED = (State.COMPLETED, State.FAILED, State.LOST)
    LIVE = (State.NEW, State.SUBMITTING, State.SUBMITTED, State.RUNNING)

    # no index of its own: served by an index below that leads with it
    market = models.ForeignKey("marketplace.Market", on_delete=models.CASCADE, related_name="slurm_tasks", db_index=False)
    job = models.ForeignKey("marketplace.Job", on_delete=models.CASCADE, related_name="slurm_tasks")
    resource_type = models.ForeignKey("marketplace.ResourceType", on_delete=models.PROTECT, related_name="+")
    batch_key = models.BigIntegerField(help_text="The engine's batch key (the tasks it started together).")
    index = models.PositiveIntegerField(help_text="Array index of this task in its batch's submission.")
    # no index of its own: the unique constraint below leads with it
    key = models.CharField(max_length=60, help_text="Idempotency key of the batch's array (Slurm comment).")
    partition = models.CharField(max_length=60)
    reservation = models.CharField(max_length=80, blank=True)
    command = models.CharField(max_length=200)
    sim_start = models.FloatField(help_text="Simulated time the market started the task.")
    duration = models.FloatField(help_text="Simulated seconds of work.")
    wall_seconds = models.FloatField(help_text="Wall seconds the task runs on Slurm (duration / clock speed).")
    attempt = models.PositiveSmallIntegerField(default=1, help_text="1 for the first run of this work, 2 for its first retry ...")
    state = models.CharField(max_length=12, choices=State.choices, default=State.NEW, db_index=True)
    slurm_job_id = models.BigIntegerField(null=True, blank=True, db_index=True, help_text="The array's job id.")
    slurm_state = models.CharField(max_length=30, blank=True)
    reason = models.CharField(max_length=200, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    applied = models.BooleanField(default=False, help_text="Its end was told to the engine (a departure is counted once).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["id"]
        indexes: ClassVar[list[models.Index]] = [models.Index(fields=["market", "state"])]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["key", "index"], name="slurm_task_key_index_unique"),
            models.CheckConstraint(condition=Q(duration__gte=0) & Q(wall_seconds__gte=0), name="slurm_task_times_non_negative"),
        ]

    def __str__(self) -> str:
        array = f"{self.slurm_job_id}_{self.index}" if self.slurm_job_id else "unsubmitted"
        return f"job {self.job_id} task {self.key}[{self.index}] ({array}, {self.state})"


class SlurmReservation(models.Model):
    """A Slurm advance reservation that holds the units the market promised a job (an ERA reservation
    or a deadline booking): ``units`` cores of one partition over [sim_start, sim_end) simulated s."""

    market = models.ForeignKey("marketplace.Market", on_delete=models.CASCADE, related_name="slurm_reservations")
    job = models.ForeignKey("marketplace.Job", on_delete=models.CASCADE, related_name="slurm_reservations")
    resource_type = models.ForeignKey("marketplace.ResourceType", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=80, unique=True)
    units = models.PositiveIntegerField()
    sim_start = models.FloatField()
    sim_end = models.FloatField()
    starts_at = models.DateTimeField(help_text="Wall-clock start given to Slurm.")
    ends_at = models.DateTimeField(help_text="Wall-clock end given to Slurm.")
    created = models.BooleanField(default=False, help_text="Slurm holds it (scontrol create reservation succeeded).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["id"]

    def __str__(self) -> str:
        return f"{self.name}: {self.units} x {self.resource_type_id} [{self.sim_start:.0f}, {self.sim_end:.0f})"


class SlurmStatus(models.Model):
    """The backend as the last poll saw it (one row per market): reachable or since when not, the
    version, nodes and partitions (JSON as ``sinfo --json`` summarised), the cores of each partition
    held by jobs that did not come from the market."""

    market = models.OneToOneField("marketplace.Market", on_delete=models.CASCADE, related_name="slurm_status")
    reachable = models.BooleanField(default=False)
    unreachable_since = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)
    version = models.CharField(max_length=40, blank=True)
    nodes = models.JSONField(default=list, blank=True)
    partitions = models.JSONField(default=list, blank=True)
    foreign_cpus = models.JSONField(default=dict, blank=True, help_text="Partition -> cores held by jobs not from the market.")
    polled_at = models.DateTimeField(null=True, blank=True)
    token = models.CharField(max_length=12, blank=True, help_text="This installation's mark in its task keys (a Slurm may serve several).")
    anchor_wall = models.DateTimeField(null=True, blank=True, help_text="Wall time of the last tick's end ...")
    anchor_sim = models.FloatField(default=0.0, help_text="... and the market clock then: maps Slurm's times to the market's.")

    def __str__(self) -> str:
        return f"slurm for market {self.market_id}: {'up' if self.reachable else 'unreachable'}"
