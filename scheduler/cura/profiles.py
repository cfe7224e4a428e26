"""Cura's model: VM types, job profiles and cluster configurations (paper 004, Secs. II-III, App. A).

A **VM type** has vCPUs, memory and a unit price per VM-second. A **job
profile** predicts a job's running time for every VM type and cluster size
(the paper's *profile and analyze* service, Sec. II-C). A **cluster
configuration** is a (VM type, number of VMs) pair; its cost is

    cost(v, k) = k * price_v * t_run(v, k)            (App. A, "Cost" columns)

Three sources of profiles:

* the paper's Tables II-V (App. A): four job types on three VM types at 10,
  20, 30 and 40 VMs -- :data:`PAPER_PROFILES` with :data:`PAPER_VM_TYPES`;
* a documented model for trace jobs (:class:`RuntimeModel`, :func:`model_profile`):
  data loading at a per-VM network throughput (paper Sec. IV-A: 50 MB/s per
  VM) plus compute work spread over the cluster at the VM type's speed, a
  per-job-class affinity to VM types, and the parallel efficiency read off
  Tables II-V;
* a profile learnt from completed runs of the same job class
  (:func:`learn_profile`): non-negative least squares of the same model's
  two terms per VM type, falling back to a prior profile where no run was seen.

Everything here is pure numpy; shapes use ``V`` for VM types and ``S`` for
cluster sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import nnls

MB = 1e6


@dataclass(frozen=True)
class VMType:
    """A VM instance type (paper 004, Sec. IV-A; App. A).

    Attributes:
        name: label, e.g. ``"VM-1"``.
        vcpus: virtual CPUs, >= 1.
        memory_gb: memory, GB, > 0.
        price: unit price, money per VM-second, > 0.

    Raises:
        ValueError: non-positive fields or an empty name.
    """

    name: str
    vcpus: int
    memory_gb: float
    price: float

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a VM type needs a name")
        if int(self.vcpus) != self.vcpus or self.vcpus < 1:
            raise ValueError(f"VM type {self.name}: vcpus must be a whole number >= 1")
        if not (math.isfinite(self.memory_gb) and self.memory_gb > 0):
            raise ValueError(f"VM type {self.name}: memory must be > 0 GB")
        if not (math.isfinite(self.price) and self.price > 0):
            raise ValueError(f"VM type {self.name}: the unit price must be > 0 per VM-second")


def prices_of(vm_types: Sequence[VMType]) -> NDArray[np.float64]:
    """(V,) unit prices, money per VM-second."""
    return np.array([t.price for t in vm_types], dtype=np.float64)


def vcpus_of(vm_types: Sequence[VMType]) -> NDArray[np.float64]:
    """(V,) vCPUs per VM."""
    return np.array([t.vcpus for t in vm_types], dtype=np.float64)


# App. A: VM-1 2 vCPU / 2 GB, VM-2 4 / 4, VM-3 8 / 8. The unit prices follow from
# the tables' own columns: cost / (VMs * t_run) = 1/6, 1/3, 2/3 per VM-second.
PAPER_VM_TYPES: tuple[VMType, ...] = (
    VMType("VM-1", 2, 2.0, 1.0 / 6.0),
    VMType("VM-2", 4, 4.0, 1.0 / 3.0),
    VMType("VM-3", 8, 8.0, 2.0 / 3.0),
)
PAPER_SIZES: tuple[int, ...] = (10, 20, 30, 40)


@dataclass(frozen=True)
class JobProfile:
    """Predicted running time of a job per VM type and cluster size (paper 004, Sec. II-C).

    Attributes:
        name: the job (class) it describes.
        sizes: (S,) cluster sizes in VMs, increasing, each >= 1.
        runtime: (V, S) predicted seconds; ``inf`` where a configuration is
            not offered.

    Raises:
        ValueError: malformed sizes or negative / NaN runtimes.
    """

    name: str
    sizes: tuple[int, ...]
    runtime: NDArray[np.float64] = field(repr=False)

    def __post_init__(self) -> None:
        sizes = np.asarray(self.sizes)
        if sizes.ndim != 1 or sizes.size == 0 or (sizes < 1).any() or (np.diff(sizes) <= 0).any():
            raise ValueError(f"profile {self.name}: sizes must be increasing whole numbers >= 1")
        rt = np.asarray(self.runtime, dtype=np.float64)
        if rt.ndim != 2 or rt.shape[1] != sizes.size:
            raise ValueError(f"profile {self.name}: runtime must be (V, {sizes.size})")
        if np.isnan(rt).any() or (rt <= 0).any():
            raise ValueError(f"profile {self.name}: runtimes must be > 0 seconds (inf: not offered)")
        object.__setattr__(self, "runtime", rt)

    def cost(self, vm_types: Sequence[VMType]) -> NDArray[np.float64]:
        """(V, S) cost of each configuration: VMs x unit price x runtime (App. A)."""
        return np.asarray(self.sizes, dtype=np.float64)[None, :] * prices_of(vm_types)[:, None] * self.runtime

    def optimal(self, vm_types: Sequence[VMType], *, within: float = math.inf, overhead: float = 0.0) -> tuple[int, int] | None:
        """The (VM type index, size index) of lowest cost whose ``runtime + overhead``
        is at most ``within`` seconds (paper 004, Sec. III-B: C_opt(J)); ties go to
        the shorter runtime, then the lower indices. None if no configuration fits."""
        cost = self.cost(vm_types)
        ok = self.runtime + overhead <= within
        if not ok.any():
            return None
        keys = np.lexsort((self.runtime.ravel(), np.where(ok, cost, np.inf).ravel()))
        v, s = divmod(int(keys[0]), len(self.sizes))
        return v, s


def table_efficiency(k: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """Parallel efficiency of Tables II-V, relative to 10 VMs: ``1.05 - 0.005 k``.

    Every table row obeys ``t_run(k) * k = t_run(10) * 10 / (1.05 - 0.005 k)``
    (e.g. Table II VM-1: 900 * 10 = 9000, 473.68 * 20 = 9000 / 0.95).
    """
    return np.asarray(1.05 - 0.005 * np.asarray(k, dtype=np.float64), dtype=np.float64)


def _table(rows: list[list[float]]) -> NDArray[np.float64]:
    """(V=3, S=4) runtimes from the printed (size x VM type) table."""
    return np.array(rows, dtype=np.float64).T


# Paper 004, App. A, Tables II-V: t_run in seconds, rows 10/20/30/40 VMs, columns VM-1..3.
PAPER_PROFILES: dict[int, JobProfile] = {
    1: JobProfile("type-1", PAPER_SIZES, _table([[900, 562.5, 321.42], [473.68, 296.05, 169.17],
                                                  [333.33, 208.33, 119.04], [264.70, 165.44, 94.53]])),
    2: JobProfile("type-2", PAPER_SIZES, _table([[1250, 500, 357.14], [657.89, 263.15, 187.96],
                                                  [462.96, 185.18, 132.27], [367.64, 147.05, 105.04]])),
    3: JobProfile("type-3", PAPER_SIZES, _table([[5000, 2187.5, 875], [2631.57, 1151.31, 460.52],
                                                  [1851.85, 810.18, 324.07], [1470.58, 643.38, 257.35]])),
    4: JobProfile("type-4", PAPER_SIZES, _table([[250, 156.25, 89.28], [131.57, 82.23, 46.99],
                                                  [92.59, 57.87, 33.06], [73.52, 45.95, 26.26]])),
}

# The printed "Cost" columns of Tables II-V (rows 10..40 VMs, columns VM-1..3): an
# independent check of the unit prices above (tests compare them with cost()).
PAPER_COSTS: dict[int, NDArray[np.float64]] = {
    1: _table([[1500, 1875, 2142.85], [1578.94, 1973.68, 2255.63], [1666.66, 2083.33, 2380.95], [1764.70, 2205.88, 2521.00]]),
    2: _table([[2083.33, 1666.66, 2380.95], [2192.98, 1754.38, 2506.26], [2314.81, 1851.85, 2645.50], [2450.98, 1960.78, 2801.12]]),
    3: _table([[8333.33, 7291.66, 5833.33], [8771.92, 7675.43, 6140.35], [9259.25, 8101.85, 6481.48], [9803.92, 8578.43, 6862.74]]),
    4: _table([[416.66, 520.83, 595.23], [438.59, 548.24, 626.56], [462.96, 578.70, 661.37], [490.19, 612.74, 700.28]]),
}


@dataclass(frozen=True)
class RuntimeModel:
    """Running time of a trace job from its work (the documented model for trace jobs).

    For a job reading ``input_bytes`` whose compute work is ``work`` vCPU-seconds,
    on k VMs of type v::

        t_run(v, k) = input_bytes / (k * load_bytes_per_s)                 (data loading)
                    + work / (k * vcpus_v * affinity_v * eff(k))           (map/shuffle/reduce)
        eff(k)      = max(min_efficiency, 1 - efficiency_slope * (k - 1))

    The load term is paper 004 Sec. IV-A (50 MB/s per VM from the storage
    servers); the efficiency slope 0.005 per VM is the one of Tables II-V
    (:func:`table_efficiency`); ``affinity_v`` in (0, 1] is the job class's
    fit to the VM type (1 on its best type). The framework start (10 s) is
    not part of the profile: the platform adds it when a job runs.

    Attributes:
        load_bytes_per_s: storage-to-VM throughput per VM, bytes/s (> 0).
        efficiency_slope: efficiency lost per extra VM (>= 0).
        min_efficiency: floor of eff(k), in (0, 1].
    """

    load_bytes_per_s: float = 50 * MB
    efficiency_slope: float = 0.005
    min_efficiency: float = 0.5

    def __post_init__(self) -> None:
        if self.load_bytes_per_s <= 0 or self.efficiency_slope < 0 or not 0 < self.min_efficiency <= 1:
            raise ValueError("load throughput must be > 0, slope >= 0 and min efficiency in (0, 1]")

    def efficiency(self, k: NDArray[np.float64]) -> NDArray[np.float64]:
        """(S,) eff(k) for cluster sizes k."""
        return np.maximum(self.min_efficiency, 1.0 - self.efficiency_slope * (np.asarray(k, dtype=np.float64) - 1.0))

    def runtime(
        self, input_bytes: float, work: float, vcpus: NDArray[np.float64], affinity: NDArray[np.float64], sizes: Sequence[int],
    ) -> NDArray[np.float64]:
        """(V, S) seconds for one job (class docstring). Raises ValueError on
        negative bytes / work or affinities outside (0, 1]."""
        aff = np.asarray(affinity, dtype=np.float64)
        if input_bytes < 0 or work < 0 or (aff <= 0).any() or (aff > 1).any():
            raise ValueError("bytes and work must be >= 0 and affinities in (0, 1]")
        k = np.asarray(sizes, dtype=np.float64)[None, :]
        speed = np.asarray(vcpus, dtype=np.float64)[:, None] * aff[:, None]
        rt = input_bytes / (k * self.load_bytes_per_s) + work / (k * speed * self.efficiency(k))
        return np.asarray(np.maximum(rt, 1e-3), dtype=np.float64)


def model_profile(
    name: str, input_bytes: float, work: float, affinity: Sequence[float], vm_types: Sequence[VMType],
    sizes: Sequence[int], model: RuntimeModel = RuntimeModel(),
) -> JobProfile:
    """A :class:`JobProfile` from :class:`RuntimeModel` (see there for units)."""
    rt = model.runtime(input_bytes, work, vcpus_of(vm_types), np.asarray(affinity, dtype=np.float64), sizes)
    return JobProfile(name, tuple(int(k) for k in sizes), rt)


@dataclass(frozen=True)
class Run:
    """One completed run of a job class: VM type index, VMs, measured seconds (> 0)."""

    vm_type: int
    vms: int
    seconds: float


def learn_profile(
    name: str, runs: Sequence[Run], prior: JobProfile, model: RuntimeModel = RuntimeModel(),
) -> JobProfile:
    """A profile learnt from completed runs of one job class (paper 004, Sec. II-C).

    For each VM type with at least two runs at two different sizes, fit
    ``t = a / k + b / (k * eff(k))`` (the two terms of :class:`RuntimeModel`:
    data loading and compute) by non-negative least squares and predict every
    size of ``prior.sizes``; other VM types keep ``prior``'s row, scaled by
    the median measured/prior ratio of the runs seen on any type (1 without runs).

    Raises:
        ValueError: a run on an unknown VM type, with vms < 1 or seconds <= 0.
    """
    V = prior.runtime.shape[0]
    sizes = np.asarray(prior.sizes, dtype=np.float64)
    for r in runs:
        if not 0 <= r.vm_type < V or r.vms < 1 or not r.seconds > 0:
            raise ValueError(f"bad run {r} for a profile of {V} VM types")
    ratios = [r.seconds / _prior_at(prior, r.vm_type, r.vms) for r in runs]
    scale = float(np.median(ratios)) if ratios else 1.0
    out = prior.runtime * scale
    for v in range(V):
        mine = [r for r in runs if r.vm_type == v]
        if len({r.vms for r in mine}) < 2:
            continue
        k = np.array([r.vms for r in mine], dtype=np.float64)
        a = np.column_stack([1.0 / k, 1.0 / (k * model.efficiency(k))])
        coef, _ = nnls(a, np.array([r.seconds for r in mine]))
        out[v] = np.maximum(coef[0] / sizes + coef[1] / (sizes * model.efficiency(sizes)), 1e-3)
    return JobProfile(name, prior.sizes, out)


def _prior_at(prior: JobProfile, v: int, vms: int) -> float:
    """The prior's runtime on type v at ``vms`` VMs, interpolated in 1/k between its sizes."""
    inv = 1.0 / np.asarray(prior.sizes, dtype=np.float64)
    row = prior.runtime[v]
    return float(np.interp(1.0 / vms, inv[::-1], row[::-1]))
