"""Cura's workload (paper 004, Sec. IV-A), derived from the SWIM Facebook 2009 trace.

The paper profiled 50 jobs made by the SWIM generator from the Facebook trace
on 6 VM types (2 to 12 vCPUs and GB of memory, in steps of 2) and replayed
11,500 arrivals of them over 100 minutes from 50 customers, each arrival one of
the 50 jobs at a small (100 MB), medium (1 GB) or large (10 GB) input. Here:

* **job classes** (:func:`job_classes`): 50 jobs of ``FB-2009_samples_24_times_1hr_0.tsv``
  with a non-zero input, drawn by a seeded generator. A class keeps its
  trace job's *shape*: shuffle ratio ``s = shuffle / input`` and output ratio
  ``o = output / input`` (each capped at 4). Its compute work is
  ``(1 + s + o) * bytes / 10 MB/s`` vCPU-seconds (10 MB/s per slot, as
  ``simulator.workloads.traces.SwimRule``). Its **affinity** to VM types: the classes
  are ranked by data intensity ``s + o``; rank quantile q prefers VM type
  ``round(q * (V - 1))`` (shuffle-heavy jobs like bigger VMs: more memory for
  the sort, fewer network hops), and ``affinity_v = max(0.4, 1 - 0.15 |v - preferred|)``.
* **runtimes**: ``scheduler.cura.profiles.RuntimeModel`` (data loading at
  50 MB/s per VM, the tables' parallel efficiency) at cluster sizes 1, 2, 4,
  8, 16 and 32 VMs;
* **arrivals** (:func:`generate`): ``n`` arrival times uniform over the span
  (a Poisson process conditioned on its count), class, size category and
  customer each uniform;
* **deadlines**: ``arrival + t_min + U(0, max_deadline)`` where ``t_min`` is the
  job's shortest run on a per-job cluster (VM boot + framework start + its
  fastest configuration). The paper draws deadlines "uniformly within the
  maximum deadline"; the ``t_min`` offset keeps every job feasible for every
  approach, so that the number of servers, not an impossible deadline,
  decides success.

VM types: ``c2 .. c12`` with 2..12 vCPUs and GB, unit price ``vCPUs / 12``
per VM-second (so the 2-vCPU type costs 1/6, App. A's VM-1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from scheduler.cura.profiles import MB, RuntimeModel, VMType, vcpus_of
from scheduler.cura.vm_aware import CuraJob

CURA_VM_TYPES: tuple[VMType, ...] = tuple(VMType(f"c{2 * i}", 2 * i, float(2 * i), 2 * i / 12.0) for i in range(1, 7))
CURA_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
SIZE_BYTES: dict[str, float] = {"small": 100 * MB, "medium": 1000 * MB, "large": 10000 * MB}
# Sec. IV-B 3 adds extra large jobs (100 GB) for Fig. 7
ALL_SIZE_BYTES: dict[str, float] = {**SIZE_BYTES, "xlarge": 100000 * MB}
SLOT_BYTES_PER_S = 10 * MB


@dataclass(frozen=True)
class JobClass:
    """A profiled job of the workload.

    Attributes:
        index: 0..n-1.
        trace_job: the FB-2009 job it was made from.
        shuffle_ratio, output_ratio: shuffle / input and output / input bytes (capped at 4).
        affinity: (V,) fit to each VM type, in (0, 1].
    """

    index: int
    trace_job: int
    shuffle_ratio: float
    output_ratio: float
    affinity: NDArray[np.float64]

    def work(self, input_bytes: float) -> float:
        """Compute work, vCPU-seconds."""
        return (1.0 + self.shuffle_ratio + self.output_ratio) * input_bytes / SLOT_BYTES_PER_S


def job_classes(path: str | Path, *, n: int = 50, seed: int = 0, vm_types: tuple[VMType, ...] = CURA_VM_TYPES) -> list[JobClass]:
    """``n`` job classes from a SWIM TSV (module docstring). Raises ValueError if
    the trace has fewer than ``n`` jobs with input bytes."""
    rows = []
    for line in Path(path).read_text().splitlines():
        f = line.split()
        if len(f) == 6 and float(f[3]) > 0:
            rows.append((int(f[0].removeprefix("job")), float(f[3]), float(f[4]), float(f[5])))
    if len(rows) < n:
        raise ValueError(f"the trace has {len(rows)} jobs with input bytes; {n} classes asked for")
    pick = np.sort(np.random.default_rng(seed).choice(len(rows), size=n, replace=False))
    chosen = [rows[k] for k in pick.tolist()]
    s = np.array([min(shuf / inp, 4.0) for _, inp, shuf, _ in chosen])
    o = np.array([min(out / inp, 4.0) for _, inp, _, out in chosen])
    V = len(vm_types)
    rank = np.argsort(np.argsort(s + o, kind="stable"), kind="stable") / max(n - 1, 1)
    preferred = np.rint(rank * (V - 1)).astype(int)
    out = []
    for k, (job, *_rest) in enumerate(chosen):
        aff = np.maximum(0.4, 1.0 - 0.15 * np.abs(np.arange(V) - preferred[k]))
        out.append(JobClass(k, job, float(s[k]), float(o[k]), aff))
    return out


def generate(
    classes: list[JobClass], *, jobs: int = 11_500, span: float = 6000.0, customers: int = 50, max_deadline: float = 200.0,
    seed: int = 0, vm_types: tuple[VMType, ...] = CURA_VM_TYPES, sizes: tuple[int, ...] = CURA_SIZES,
    boot_s: float = 60.0, framework_start: float = 10.0, model: RuntimeModel | None = None,
    categories: tuple[str, ...] | None = None,
) -> list[CuraJob]:
    """The arrivals of the experiment (module docstring), sorted by arrival.

    Args:
        classes: from :func:`job_classes`.
        jobs: number of arrivals; span: seconds they arrive over (6000 s = 100 min).
        customers: customers, drawn uniformly per job.
        max_deadline: seconds of deadline slack at most, beyond the job's ``t_min``.
        seed: seeds every draw.
        boot_s, framework_start: the per-job cluster's VM boot and the framework start,
            seconds (they set ``t_min``).
        categories: size categories drawn uniformly (names of ``ALL_SIZE_BYTES``); None: small,
            medium and large, with job classes numbered ``class * 3 + size`` as before; given: numbered
            ``class * 4 + index in ALL_SIZE_BYTES``.

    Raises:
        ValueError: non-positive counts or span, negative max deadline, an unknown category.
    """
    if jobs < 1 or span <= 0 or customers < 1 or max_deadline < 0 or not classes:
        raise ValueError("jobs, span and customers must be positive, classes non-empty and max_deadline >= 0")
    model = model or RuntimeModel()
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0.0, span, jobs))
    cls = rng.integers(0, len(classes), jobs)
    size = rng.integers(0, len(SIZE_BYTES), jobs)
    customer = rng.integers(0, customers, jobs)
    slack = rng.uniform(0.0, max_deadline, jobs)
    vcpus = vcpus_of(vm_types)
    nbytes = list(SIZE_BYTES.values())
    number = 3
    if categories is not None:
        if not categories or any(c not in ALL_SIZE_BYTES for c in categories):
            raise ValueError(f"categories must be names of {sorted(ALL_SIZE_BYTES)}")
        names = list(ALL_SIZE_BYTES)
        index = [names.index(c) for c in categories]
        size = np.array(index)[rng.integers(0, len(index), jobs)]
        nbytes, number = list(ALL_SIZE_BYTES.values()), len(names)
    cache: dict[tuple[int, int], NDArray[np.float64]] = {}
    out = []
    for i in range(jobs):
        key = (int(cls[i]), int(size[i]))
        if key not in cache:
            c = classes[key[0]]
            b = nbytes[key[1]]
            cache[key] = model.runtime(b, c.work(b), vcpus, c.affinity, sizes)
        rt = cache[key]
        t_min = boot_s + framework_start + float(rt.min())
        out.append(CuraJob(i, float(arrival[i]), float(arrival[i] + t_min + slack[i]), rt, int(customer[i]), key[0] * number + key[1]))
    return out
