"""Jobs, which are the bids: a budget, a utility function and work per resource type."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q

from marketplace.infra.locking import NoKeyLockManager
from marketplace.ledger.models import MONEY
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.models.tenants import Tenant


class Job(models.Model):
    """A bid for cluster service (paper 000, Sec. 3: budget b_i and utility u_i).

    Times prefixed ``sim_`` are simulated seconds on the market clock; the
    others are wall-clock timestamps.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        CANCELLED = "cancelled", "Cancelled"

    class Utility(models.TextChoices):
        LINEAR = "linear", "Linear: value grows in proportion to the shares (sum w_j s_j)"
        LOG = "log", "Log-scale: diminishing returns, the first share counts most (sum w_j log s_j)"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    # no index of its own: served by an index below that leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="jobs", db_index=False)
    # no index of its own: served by an index below that leads with it
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="jobs", db_index=False)
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=120, blank=True)
    budget = models.DecimalField(**MONEY)
    charged = models.DecimalField(default=0, **MONEY)
    utility = models.CharField(max_length=10, choices=Utility.choices, default=Utility.LINEAR)
    # no index of its own: (market, status) below serves every lookup by status (they all name the market); every
    # index of a job is written again whenever its status changes (queued -> running -> finished: the clock's writes)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    external_id = models.CharField(max_length=60, blank=True, help_text="Trace job id for replayed jobs.")
    job_class = models.CharField(
        max_length=120, blank=True,
        help_text="Jobs of one tenant and class are repeats: their utility is learnt together (paper 000, Sec. 5). Default: the name.",
    )
    average_shares = models.JSONField(
        null=True, blank=True, help_text="Average job resource at completion: resource type name -> time-averaged share (Sec. 5, Def. 1).",
    )
    min_utility = models.FloatField(
        null=True, blank=True, help_text="SLO: the minimum utility (paper 000, Sec. 6); the budget is paid only if it is met.",
    )
    achieved_utility = models.FloatField(
        null=True, blank=True, help_text="Utility of the job's average shares at completion (SLO jobs; paper 000, Sec. 5-6).",
    )
    slot_seconds = models.FloatField(
        null=True, blank=True,
        help_text="Slot-seconds of work the job was served (its completed tasks' work, summed over resource types), set when it "
                  "departs or is cancelled; charged / slot_seconds is the rate it paid (docs/economy.md).",
    )
    sim_submit_time = models.FloatField()
    sim_start_time = models.FloatField(null=True, blank=True)
    sim_finish_time = models.FloatField(null=True, blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = NoKeyLockManager()  # row locks: FOR NO KEY UPDATE (infra.locking)

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        constraints = (
            models.CheckConstraint(condition=Q(budget__gt=0), name="job_budget_positive"),
            models.CheckConstraint(condition=Q(charged__gte=0), name="job_charged_non_negative"),
        )
        # (tenant, newest first): a tenant's job list and its count read only its own rows at any size;
        # (market, sim_finish_time): the departed jobs since a time (market.selectors.job_counts);
        # a tenant's replayed jobs (a trace's id in external_id; few of a busy tenant's): the account page's replay line;
        # (tenant, job_class): a class's finished repeats (auction.selectors: utility learning), no pattern-ops twin
        indexes = (models.Index(fields=["market", "status"]), models.Index(fields=["tenant", "-id"], name="job_tenant_newest"),
                   models.Index(fields=["market", "sim_finish_time"], name="job_market_departed"),
                   models.Index(fields=["tenant", "job_class"], name="job_tenant_class"),
                   models.Index(fields=["tenant"], name="job_replayed", condition=~Q(external_id="")))

    def __str__(self) -> str:
        return self.name or f"job {self.pk}"

    @property
    def response_time(self) -> float | None:
        """Simulated seconds from submission to completion; None unless the job finished
        (a cancelled job's ``sim_finish_time`` is when it was cancelled: no response)."""
        if self.status != self.Status.FINISHED or self.sim_finish_time is None:
            return None
        return self.sim_finish_time - self.sim_submit_time


class JobWork(models.Model):
    """A job's work and utility weight on one resource type, and its progress."""

    # no index of its own: the unique (job, resource type) below leads with it
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="work", db_index=False)
    resource_type = models.ForeignKey(ResourceType, on_delete=models.PROTECT)
    tasks = models.PositiveIntegerField()
    task_duration = models.FloatField(help_text="Simulated seconds per task.")
    weight = models.FloatField(default=1.0, help_text="Utility weight w_ij >= 0.")
    pending = models.PositiveIntegerField(default=0)
    running = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)

    class Meta:
        ordering: ClassVar[list[str]] = ["resource_type__stage", "resource_type_id"]
        constraints = (
            models.UniqueConstraint(fields=["job", "resource_type"], name="job_work_unique_type"),
            models.CheckConstraint(condition=Q(task_duration__gt=0), name="job_work_duration_positive"),
            models.CheckConstraint(condition=Q(weight__gte=0), name="job_work_weight_non_negative"),
        )

    def __str__(self) -> str:
        return f"{self.job}: {self.tasks} x {self.task_duration}s on {self.resource_type.name}"
