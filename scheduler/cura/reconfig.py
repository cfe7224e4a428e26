"""Cura's reconfiguration-based VM pool manager (paper 004, Sec. III-B).

Over a *reconfiguration time window* of arrivals the manager records, for
each job, its optimal cluster configuration ``C_opt(J)`` -- the lowest-cost
configuration that meets its deadline when started at its arrival (pool sizes
ignored) -- and the configuration it actually got. At the end of the window:

* **target pool sizes**: each VM type first gets the largest cluster the
  window's optimal configurations on it use, then the remaining server cores
  are split in proportion to the core-seconds those configurations use
  (``sum k * t_run * vCPUs`` per type), in whole VMs;
* **estimated benefit** (money): what the window's jobs paid above their
  optimal configurations (``sum cost(actual) - cost(C_opt)``; a job that got
  no configuration counts its ``cost(C_opt)``), i.e. the saving the next
  window of the same workload would make on pools that fit it;
* **reconfiguration cost** (money): the VM-time lost by the change, each
  removed VM ``price * shutdown_s`` and each added VM ``price * boot_s``
  (the paper: "the cost of reconfiguration operations (shutting down some
  instances and starting others)").

The change is executed only if ``benefit > beta * cost``. Pools shrink as
their VMs' running jobs end; added VMs join ``shutdown_s + boot_s`` after the
removed ones are free (the freed cores are reused), so the total cores never
exceed the budget. Every decision, executed or not, is a
:class:`ReconfigurationRecord`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scheduler.cura.profiles import VMType, prices_of, vcpus_of
from scheduler.cura.vm_aware import CuraJob, VMAwareScheduler


@dataclass(frozen=True)
class ReconfigurationRecord:
    """One end-of-window decision (Sec. III-B).

    Attributes:
        time: simulated seconds.
        before: (V,) pool sizes before, VMs.
        target: (V,) sizes the window's workload asks for.
        after: (V,) sizes after (``before`` if not executed).
        benefit: estimated saving, money.
        cost: reconfiguration cost, money.
        executed: ``benefit > beta * cost`` and the target differs.
        jobs: arrivals observed in the window.
    """

    time: float
    before: tuple[int, ...]
    target: tuple[int, ...]
    after: tuple[int, ...]
    benefit: float
    cost: float
    executed: bool
    jobs: int


class ReconfigurationManager:
    """Re-sizes a :class:`~scheduler.cura.vm_aware.VMAwareScheduler`'s pools (module docstring).

    Args:
        vm_types: (V,) the pools' VM types.
        core_budget: vCPUs the servers offer (servers x cores per server).
        window: reconfiguration time window, simulated seconds (> 0).
        beta: benefit-to-cost factor (>= 0).
        shutdown_s, boot_s: seconds to shut a VM down and to boot one (>= 0).
        framework_start: seconds every run adds (as the scheduler's).

    Raises:
        ValueError: out-of-range parameters.
    """

    def __init__(
        self, vm_types: Sequence[VMType], core_budget: int, *, window: float = 300.0, beta: float = 1.0,
        shutdown_s: float = 10.0, boot_s: float = 60.0, framework_start: float = 10.0,
    ) -> None:
        if not window > 0 or beta < 0 or shutdown_s < 0 or boot_s < 0 or core_budget < 0:
            raise ValueError("window must be > 0; beta, shutdown, boot and the core budget >= 0")
        self.vm_types = tuple(vm_types)
        self.prices = prices_of(self.vm_types)
        self.vcpus = vcpus_of(self.vm_types)
        self.core_budget = int(core_budget)
        self.window, self.beta = float(window), float(beta)
        self.shutdown_s, self.boot_s = float(shutdown_s), float(boot_s)
        self.framework_start = float(framework_start)
        self.records: list[ReconfigurationRecord] = []
        self._reset(0.0)

    def _reset(self, now: float) -> None:
        self.window_start = now
        self.demand = np.zeros(len(self.vm_types))  # core-seconds of optimal configurations per type
        self.floor = np.zeros(len(self.vm_types), dtype=np.int64)  # largest optimal cluster seen per type, VMs
        self.extra = 0.0
        self.seen = 0

    def optimal(self, job: CuraJob, sizes: Sequence[int]) -> tuple[int, int, float, float] | None:
        """C_opt(J): (VM type, VMs, runtime s, cost) of the cheapest configuration meeting
        the deadline from the job's arrival, or None."""
        rt = job.runtime + self.framework_start
        k = np.asarray(sizes, dtype=np.float64)[None, :]
        cost = np.where(job.arrival + rt <= job.deadline + 1e-9, k * self.prices[:, None] * rt, np.inf)
        flat = int(np.argmin(cost))
        v, s = divmod(flat, cost.shape[1])
        if not math.isfinite(cost[v, s]):
            return None
        return v, int(sizes[s]), float(rt[v, s]), float(cost[v, s])

    def observe(self, job: CuraJob, sizes: Sequence[int], actual_cost: float | None) -> None:
        """Record an arrival of the window and the cost of the configuration it got (None: none)."""
        opt = self.optimal(job, sizes)
        self.seen += 1
        if opt is None:
            return
        v, vms, rt, cost = opt
        self.demand[v] += vms * rt * self.vcpus[v]
        self.floor[v] = max(int(self.floor[v]), vms)
        self.extra += cost if actual_cost is None else max(actual_cost - cost, 0.0)

    def target_sizes(self) -> NDArray[np.int64]:
        """(V,) whole VMs per type: first, each demanded type gets the largest cluster
        its window's optimal configurations use (so none of them is impossible), then
        the remaining cores are split in proportion to the demand (core-seconds).
        If the floors alone exceed the budget, the whole budget is split by demand.

        Raises:
            ValueError: no demand observed.
        """
        total = float(self.demand.sum())
        if total <= 0:
            raise ValueError("no demand observed")
        floor = np.where(self.demand > 0, self.floor, 0)
        if float(np.dot(floor, self.vcpus)) > self.core_budget:
            floor = np.zeros_like(floor)
        rest = self.core_budget - float(np.dot(floor, self.vcpus))
        cores = rest * self.demand / total
        vms = floor + np.floor(cores / self.vcpus).astype(np.int64)
        left = self.core_budget - float(np.dot(vms, self.vcpus))
        for v in np.argsort(-(cores - np.floor(cores / self.vcpus) * self.vcpus)).tolist():  # largest remainders first
            if self.vcpus[v] <= left and self.demand[v] > 0:
                vms[v] += 1
                left -= self.vcpus[v]
        return np.asarray(vms, dtype=np.int64)

    def change_cost(self, before: Sequence[int], after: Sequence[int]) -> float:
        """Money lost to shutting down removed VMs and booting added ones."""
        delta = np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64)
        down = np.maximum(-delta, 0) * self.prices * self.shutdown_s
        up = np.maximum(delta, 0) * self.prices * self.boot_s
        return float(down.sum() + up.sum())

    def due(self, now: float) -> bool:
        return now >= self.window_start + self.window

    def step(self, scheduler: VMAwareScheduler, now: float) -> ReconfigurationRecord | None:
        """At the end of a window: decide, maybe execute, record, start a new window."""
        if not self.due(now):
            return None
        before = tuple(scheduler.pool_sizes)
        if self.demand.sum() <= 0:
            self._reset(now)
            return None
        target = self.target_sizes()
        benefit, cost = self.extra, self.change_cost(before, target.tolist())
        changed = tuple(int(x) for x in target) != before
        execute = changed and benefit > self.beta * cost
        after = self._apply(scheduler, target, now) if execute else before
        rec = ReconfigurationRecord(now, before, tuple(int(x) for x in target), after, benefit, cost, execute, self.seen)
        self.records.append(rec)
        self._reset(now)
        return rec

    def _apply(self, scheduler: VMAwareScheduler, target: NDArray[np.int64], now: float) -> tuple[int, ...]:
        """Resize the pools; added VMs join ``shutdown_s + boot_s`` after the removed ones are free."""
        return tuple(scheduler.resize(target.tolist(), now, self.shutdown_s + self.boot_s))
