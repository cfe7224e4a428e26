"""VM pools of a market (paper 004, Cura): VM types, pools, settings, Cura jobs and reconfigurations.

A market may be backed by pools of ready VMs. Staff edit the VM types, the
pool sizes and the reconfiguration parameters (every change audited as a
``ConfigChange``, ``services.pools``); tenants submit jobs with a deadline only
and get the configuration Cura's VM-aware scheduler chose (``scheduler.cura.vm_aware``).
"""

from __future__ import annotations

from typing import ClassVar

from django.core.validators import MinValueValidator
from django.db import models

from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant

RATE = {"max_digits": 24, "decimal_places": 12}


class VMInstanceType(models.Model):
    """A VM type (paper 004, Sec. IV-A): vCPUs, memory and a unit price per VM-second."""

    # no index of its own: the unique constraint below leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="vm_types", db_index=False)
    name = models.CharField(max_length=40)
    vcpus = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    memory_gb = models.FloatField(validators=[MinValueValidator(0.001)])
    price = models.DecimalField(**RATE, help_text="Money per VM-second.")
    position = models.PositiveIntegerField(default=0, help_text="Order of the pools (the scheduler's VM type index).")

    class Meta:
        ordering: ClassVar[list[str]] = ["market", "position", "id"]
        constraints = (
            models.UniqueConstraint(fields=["market", "name"], name="vmtype_unique_name"),
            models.CheckConstraint(condition=models.Q(price__gt=0), name="vmtype_price_positive"),
            models.CheckConstraint(condition=models.Q(vcpus__gte=1), name="vmtype_vcpus_positive"),
        )

    def __str__(self) -> str:
        return f"{self.name} ({self.vcpus} vCPU, {self.memory_gb:g} GB)"


class VMPool(models.Model):
    """The ready VMs of one type (paper 004, Sec. II-C, Fig. 2)."""

    vm_type = models.OneToOneField(VMInstanceType, on_delete=models.CASCADE, related_name="pool")
    size = models.PositiveIntegerField(default=0, help_text="VMs in the pool.")

    def __str__(self) -> str:
        return f"{self.vm_type.name} pool: {self.size} VMs"


class PoolSettings(models.Model):
    """The pool manager's parameters (paper 004, Secs. III-B and IV-A)."""

    market = models.OneToOneField(Market, on_delete=models.CASCADE, related_name="pool_settings")
    beta = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)],
                             help_text="Reconfigure only when the estimated benefit exceeds beta x the reconfiguration cost.")
    reconf_window_s = models.FloatField(default=300.0, help_text="Reconfiguration time window, simulated seconds.")
    boot_s = models.FloatField(default=60.0, help_text="VM boot time, seconds.")
    shutdown_s = models.FloatField(default=10.0, help_text="VM shutdown time, seconds.")
    framework_start_s = models.FloatField(default=10.0, help_text="Framework (Hadoop) start on ready VMs, seconds.")
    core_budget = models.PositiveIntegerField(default=0, help_text="vCPUs the servers offer (0: the pools' current cores).")
    engine_state = models.JSONField(default=dict, blank=True, help_text="The live Cura driver (simulator.cura.live), between ticks.")

    def __str__(self) -> str:
        return f"pool settings of {self.market}"


class CuraJob(models.Model):
    """A tenant's job run by Cura: a job type and a deadline in, a configuration out."""

    class Status(models.TextChoices):
        WAITING = "waiting"  # no reservation yet: Alg. 1 places it when a window has room
        RESERVED = "reserved"  # a tentative reservation, re-planned on arrivals and window ends
        RUNNING = "running"
        DONE = "done"
        MISSED = "missed"  # no configuration could meet its deadline any more: never ran, hold released
        CANCELLED = "cancelled"
        REJECTED = "rejected"

    LIVE = (Status.WAITING, Status.RESERVED, Status.RUNNING)

    # no index of its own: served by an index below that leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="cura_jobs", db_index=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="cura_jobs")
    job_type = models.PositiveSmallIntegerField(help_text="Profiled job type (paper 004, Tables II-V).")
    arrival_s = models.FloatField(help_text="Simulated seconds at submission.")
    deadline_s = models.FloatField(help_text="Absolute deadline, simulated seconds.")
    status = models.CharField(max_length=10, choices=Status.choices)
    vm_type = models.ForeignKey(VMInstanceType, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    vms = models.PositiveIntegerField(default=0)
    start_s = models.FloatField(null=True, blank=True)
    end_s = models.FloatField(null=True, blank=True)
    cost = models.DecimalField(null=True, blank=True, **RATE, help_text="Resource cost: VMs x unit price x runtime.")
    earliest_deadline_s = models.FloatField(null=True, blank=True, help_text="For a rejected job: the earliest deadline that works.")
    job_class = models.CharField(max_length=60, blank=True,
                                 help_text="Runs of one tenant's class teach its profile (paper 004, Sec. II-C).")
    runtime_scale = models.FloatField(default=1.0, validators=[MinValueValidator(0.01)],
                                      help_text="The simulated cluster's truth: real run / the built-in profile's run.")
    estimate = models.JSONField(default=list, blank=True, help_text="(V, S) seconds the scheduler planned with (learnt or built in).")
    held = models.DecimalField(default=0, max_digits=18, decimal_places=4, help_text="Money still held on the tenant's account.")
    charged = models.DecimalField(default=0, max_digits=18, decimal_places=4)
    finished_s = models.FloatField(null=True, blank=True, help_text="Simulated seconds the run really ended.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        indexes = (models.Index(fields=["market", "status", "end_s"], name="curajob_active"),)

    def __str__(self) -> str:
        return f"Cura job {self.pk} ({self.status})"

    @property
    def paid_rate(self) -> float | None:
        """What the tenant pays per slot-second of its work, money (a slot per vCPU): once charged, the
        charge over the VM-seconds it ran x vCPUs; before, its configuration's cost over the planned
        ones (VMs x unit price x runtime over VMs x vCPUs x runtime: its VM type's price per vCPU-second).
        None when it has no configuration or ran nothing."""
        if self.vm_type is None or not self.vms or self.start_s is None:
            return None
        charged = self.charged > 0 and self.finished_s is not None
        end, amount = (self.finished_s, self.charged) if charged else (self.end_s, self.cost)
        seconds = (end - self.start_s) if end is not None else 0.0
        if amount is None or seconds <= 0:
            return None
        return float(amount) / (self.vms * self.vm_type.vcpus * seconds)


class CuraLedgerLink(models.Model):
    """Which Cura job a ledger entry moved money for (its hold, charge or release): written by the
    pools' services with the entries (``services.jobs._money``). Pools keeps the link, so the
    ledger names no part."""

    entry = models.OneToOneField("marketplace.LedgerEntry", primary_key=True, on_delete=models.CASCADE, related_name="cura_link")
    cura_job = models.ForeignKey(CuraJob, on_delete=models.PROTECT, related_name="ledger_links")

    def __str__(self) -> str:
        return f"entry {self.entry_id} -> Cura job {self.cura_job_id}"


class PoolReconfiguration(models.Model):
    """A reconfiguration decision (paper 004, Sec. III-B), executed or not."""

    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="pool_reconfigurations")
    time_s = models.FloatField(help_text="Simulated seconds.")
    before = models.JSONField(help_text="{VM type: VMs} before.")
    target = models.JSONField(help_text="{VM type: VMs} the window's workload asks for.")
    after = models.JSONField(help_text="{VM type: VMs} after.")
    benefit = models.FloatField(help_text="Estimated saving, money.")
    cost = models.FloatField(help_text="Shutdown + boot cost, money.")
    executed = models.BooleanField()
    jobs = models.PositiveIntegerField(default=0, help_text="Jobs observed in the window.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-time_s", "-id"]

    def __str__(self) -> str:
        return f"reconfiguration at {self.time_s:.0f} s ({'executed' if self.executed else 'declined'})"
