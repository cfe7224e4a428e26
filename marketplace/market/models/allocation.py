"""Results of clearings and the market's time series (shares, prices, fairness)."""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.models.tenants import Tenant


class AllocationSnapshot(models.Model):
    """One stored clearing: the Plan computed on ``state_version`` of the market.

    ``plan`` is ``scheduler.plan.Plan.to_bytes()`` (job ids, shares,
    sub-budgets, payment rules as raw arrays; reservations and diagnostics in
    a small header) in one row, so a clearing writes one row whatever the
    number of jobs; read it with ``adapters.plan_of``. Only the newest
    ``PLAN_RETENTION`` clearings of a market keep it (older ones keep their
    scalar diagnostics and prices; share history lives in ``ShareSample``).
    """

    # no index of its own: served by an index below that leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="snapshots", db_index=False)
    state_version = models.BigIntegerField()
    sim_time = models.FloatField()
    mechanism = models.CharField(max_length=30)
    plan = models.BinaryField(null=True, blank=True, help_text="scheduler.plan.Plan.to_bytes()")
    max_kkt_residual = models.FloatField(default=0.0)
    rounds = models.PositiveIntegerField()
    converged = models.BooleanField()
    n_jobs = models.PositiveIntegerField()
    solve_ms = models.FloatField(help_text="Wall time of the auction solve, milliseconds.")
    total_ms = models.FloatField(help_text="Wall time of the whole clearing (load, solve, store), milliseconds.")
    created_at = models.DateTimeField(auto_now_add=True)
    params = models.JSONField(
        default=dict, blank=True,
        help_text="The parameters the clearing used (market.adapters.clearing_params): stages, alpha, tolerance, rounds, "
                  "fair-share knobs, capacities.",
    )

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        get_latest_by = "id"
        indexes = (models.Index(fields=["market", "-id"]),)

    def __str__(self) -> str:
        return f"clearing {self.pk} of market {self.market_id} at t={self.sim_time}s ({self.mechanism})"


class ShareSample(models.Model):
    """A job's within-queue shares at a simulated time, one row per job and fairness
    sample (and one at its departure): the downsampled history the charts show.

    The market's largest table by rows (every present job at every fairness sample: 5,000 rows a
    minute of simulated time at 5,000 active jobs), written by the clock tick while it holds the
    market row, so a row carries only what is read: the job (its market is the job's), the time and
    the shares. The job is a foreign key without a database constraint: PostgreSQL checks a
    constraint with a locking look-up of the job per inserted row at commit (about 4 us a row: 40 %
    of a 5,000-job tick's database time), and the rows need none. They are written only by the tick,
    inside its transaction, for jobs its engine holds, and a job is never deleted (its ledger
    entries, append-only, protect it, and it protects its market); should one ever be, Django's
    cascade deletes its samples first. ``tests/marketplace/market/test_share_samples.py`` checks both.
    """

    # no index of its own: the (job, sim_time) index below serves every lookup by job (its leading column)
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="share_samples", db_index=False, db_constraint=False)
    sim_time = models.FloatField()
    shares = models.JSONField(help_text="Share per resource type, in resource-type order (stage, id).")

    class Meta:
        ordering: ClassVar[list[str]] = ["sim_time", "id"]
        indexes = (models.Index(fields=["job", "sim_time"]),)

    def __str__(self) -> str:
        return f"job {self.job_id} at t={self.sim_time}s: {self.shares}"


class PriceSample(models.Model):
    """Implied unit price of a resource type at a clearing: sum of sub-budgets / capacity."""

    snapshot = models.ForeignKey(AllocationSnapshot, on_delete=models.CASCADE, related_name="prices")
    resource_type = models.ForeignKey(ResourceType, on_delete=models.CASCADE)
    sim_time = models.FloatField()
    price = models.FloatField()

    def __str__(self) -> str:
        return f"resource type {self.resource_type_id} at t={self.sim_time}s: price {self.price}"


class FairnessSample(models.Model):
    """A leaf queue's fairness on one resource type at a simulated time (paper 002, Eqs. 1-5)."""

    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="fairness_samples")
    sim_time = models.FloatField(db_index=True)
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE)
    resource_type = models.ForeignKey(ResourceType, on_delete=models.CASCADE)
    usage = models.FloatField(help_text="Accumulated usage f_i, resource-seconds.")
    share = models.FloatField(help_text="Fair share S_i, units.")
    demand = models.FloatField(help_text="Current demand d_i, units.")
    entitled = models.FloatField(help_text="Integral of min(d_i, S_i), resource-seconds.")
    rho = models.FloatField(
        null=True,
        help_text="Fairness degree f_i / integral of min(d_i, S_i); null where it is infinite (usage without entitlement).",
    )
    running = models.FloatField(help_text="Units held at the sample time.")

    class Meta:
        ordering: ClassVar[list[str]] = ["sim_time", "id"]

    def __str__(self) -> str:
        return f"queue {self.queue_id}, resource type {self.resource_type_id} at t={self.sim_time}s: rho={self.rho}"


class MarketSample(models.Model):
    """Cluster-wide series per resource type: sharing benefit and loss, utilisation."""

    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="market_samples")
    sim_time = models.FloatField(db_index=True)
    resource_type = models.ForeignKey(ResourceType, on_delete=models.CASCADE)
    benefit = models.FloatField(help_text="Sharing benefit Psi = sum max(rho - 1, 0).")
    loss = models.FloatField(help_text="Sharing loss Omega = sum min(rho - 1, 0).")
    utilisation = models.FloatField()
    active_jobs = models.PositiveIntegerField()

    class Meta:
        ordering: ClassVar[list[str]] = ["sim_time", "id"]

    def __str__(self) -> str:
        return f"resource type {self.resource_type_id} at t={self.sim_time}s: benefit {self.benefit}, loss {self.loss}"


class SpotSettlement(models.Model):
    """What one auction job that left the market paid for what it used of one resource type, and
    whose it was (docs/economy.md, "One unit of price" and "A price nobody moves alone").

    A departed or cancelled job whose payment rule is the auction's (pay at completion, or if its
    SLO was met: paper 000, Secs. 3 and 6) adds its charge, split over the resource types in
    proportion to the slot-seconds it used of each, and those slot-seconds. ``utilisation`` is the
    type's busy share of its capacity then: the level of demand the charge was made at. Private:
    the reference rate reads these (one vote per tenant), and only pooled sums are published
    (``RateSample``), never one tenant's payment.
    """

    # no index of its own: served by an index below that leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="spot_settlements", db_index=False)
    resource_type = models.ForeignKey(ResourceType, on_delete=models.CASCADE)
    tenant = models.ForeignKey(Tenant, null=True, on_delete=models.SET_NULL, related_name="+")
    sim_time = models.FloatField(help_text="Simulated seconds on the market clock when the job settled.")
    charged = models.FloatField(help_text="The job's charge attributed to this resource type, money.")
    slot_seconds = models.FloatField(help_text="Slot-seconds of this resource type the job used.")
    utilisation = models.FloatField(help_text="Busy slots / capacity of the type when it settled, 0 to 1.")
    pooled = models.BooleanField(default=False, help_text="Published in a RateSample already.")

    class Meta:
        ordering: ClassVar[list[str]] = ["sim_time", "id"]
        indexes = (models.Index(fields=["market", "sim_time"]), models.Index(fields=["market", "pooled"]))

    def __str__(self) -> str:
        return f"resource type {self.resource_type_id} at t={self.sim_time}s: {self.charged} for {self.slot_seconds} slot-s"


class RateSample(models.Model):
    """What auction jobs that left the market paid for what they used, on one resource type, pooled
    so that no row reveals one tenant's payment: the published realised rate of the spot market
    (docs/economy.md, "One unit of price").

    The settlements of a type (``SpotSettlement``) not yet published are pooled into one row as soon
    as they come from at least ``MARKET_RATE_MIN_TENANTS`` (3) tenants; the row's time is the last
    settlement's, its ``utilisation`` the slot-second-weighted mean of theirs.
    """

    # no index of its own: served by an index below that leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="rate_samples", db_index=False)
    resource_type = models.ForeignKey(ResourceType, on_delete=models.CASCADE)
    sim_time = models.FloatField(help_text="Simulated seconds on the market clock when the jobs settled.")
    charged = models.FloatField(help_text="The jobs' charges attributed to this resource type, money.")
    slot_seconds = models.FloatField(help_text="Slot-seconds of this resource type the jobs used.")
    jobs = models.PositiveIntegerField(help_text="Jobs settled.")
    tenants = models.PositiveIntegerField(default=0, help_text="Distinct tenants whose jobs are pooled here (0: before pooling).")
    utilisation = models.FloatField(help_text="Busy slots / capacity of the type when they settled, 0 to 1.")

    class Meta:
        ordering: ClassVar[list[str]] = ["sim_time", "id"]
        indexes = (models.Index(fields=["market", "resource_type", "sim_time"]),)

    def __str__(self) -> str:
        return f"resource type {self.resource_type_id} at t={self.sim_time}s: {self.charged} for {self.slot_seconds} slot-s"
