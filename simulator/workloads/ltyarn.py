"""Paper 002's macro-benchmark (Sec. 7.1-7.2), synthesised from its job mix: Facebook, Purdue, TPC-H and Spark.

What the paper gives and how it becomes jobs (the mapping; every number not in the
paper is marked "chosen"):

* **cluster**: 59 slave VMs of 4 GB (Sec. 7: t2.medium-like VMs, one of 60 is the
  master); YARN allocates memory only. Chosen: 1 GB containers (Hadoop 2.2's default
  map container), so :data:`CONTAINERS` = 236 units.
* **task times**: the paper reports only TPC-H's, a mean of 23.6 s (Fig. 11a). Chosen:
  every job's tasks of one phase last ``23.6 s x U[0.5, 1.5]`` (drawn per job and phase).
* **Facebook** (Table 3): the 100 jobs of its nine bins (maps, reduces and counts
  as printed), in a seeded random order, submitted at the submit times of the first
  100 jobs of the SWIM FB-2009 sample (the paper used ``..._1hr_1.tsv``, which the
  repository does not hold; ``..._1hr_0.tsv`` is its sibling), from the queue's start.
* **Purdue**: five jobs (WordCount, TeraSort, Grep, InvertedIndex, HistogramMovies) on
  40 GB each, "submitted sequentially at a fixed interval of 3 mins". Chosen: 320 maps
  (40 GB / Hadoop 2.2's 128 MB block) and 32 reduces each.
* **TPC-H**: Q1, Q9, Q12, Q17, five instances each, on 40 GB, "launch[ed] each one
  after the previous one finished in a round robin fashion". Chosen: each query one
  MapReduce job of 320 maps and 32 reduces (a 40 GB scan).
* **Spark**: kmeans and ALS, ten instances each, each "launched ... 2 minutes after each
  job completed". Chosen: alternating kmeans and ALS, each application 20 executor
  containers held for five task times (its iterations).

A job's phases run one after the other (maps, then reduces): the reduce phase is
submitted when the last map finishes. All four queues have equal weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.workloads.traces import load_swim

CONTAINERS = 59 * 4  # 59 slave VMs x 4 GB, 1 GB containers
TASK_MEAN_S = 23.6  # paper 002, Fig. 11a: TPC-H's mean task time
BLOCK_MAPS, INPUT_REDUCES = 320, 32  # 40 GB / 128 MB blocks; reduces chosen at a tenth
QUEUES = ("facebook", "purdue", "tpch", "spark")
TABLE_3: tuple[tuple[int, int, int], ...] = (  # (maps, reduces, jobs) per bin
    (1, 0, 38), (2, 0, 18), (10, 2, 14), (50, 0, 10), (100, 10, 6), (200, 0, 6), (400, 0, 4), (400, 30, 2), (800, 60, 2),
)
SPARK_EXECUTORS, SPARK_ITERATIONS = 20, 5
PURDUE_INTERVAL_S, SPARK_GAP_S = 180.0, 120.0


@dataclass(frozen=True)
class MacroJob:
    """One job of a workload: its phases ``(tasks, seconds per task)`` run in order.

    ``submit`` is the time after the queue's start (a timed job), or None for a job of a
    chain, submitted ``gap`` seconds after the previous job of its queue finished.
    """

    name: str
    phases: tuple[tuple[int, float], ...]
    submit: float | None
    gap: float = 0.0


def _time(rng: np.random.Generator) -> float:
    return TASK_MEAN_S * float(rng.uniform(0.5, 1.5))


def _mapreduce(name: str, maps: int, reduces: int, rng: np.random.Generator, submit: float | None, gap: float = 0.0) -> MacroJob:
    phases = [(maps, _time(rng))] + ([(reduces, _time(rng))] if reduces else [])
    return MacroJob(name, tuple(phases), submit, gap)


def facebook(rng: np.random.Generator, trace: str | Path, time_scale: float = 1.0) -> list[MacroJob]:
    """Table 3's 100 jobs at the first 100 FB-2009 submit times (from 0, times ``time_scale``)."""
    times = sorted(j.submit_time for j in load_swim(trace, hours=2.0))[:100]
    bins = [(maps, reduces) for maps, reduces, n in TABLE_3 for _ in range(n)]
    order = rng.permutation(len(bins))
    return [_mapreduce(f"fb bin {bins[k][0]}m", bins[k][0], bins[k][1], rng, time_scale * (times[i] - times[0]))
            for i, k in enumerate(order.tolist())]


def facebook_span(trace: str | Path) -> float:
    """Seconds between the first and the 100th FB-2009 submission (the Facebook workload's arrival span)."""
    times = sorted(j.submit_time for j in load_swim(trace, hours=2.0))[:100]
    return float(times[-1] - times[0])


def purdue(rng: np.random.Generator) -> list[MacroJob]:
    names = ("WordCount", "TeraSort", "Grep", "InvertedIndex", "HistogramMovies")
    return [_mapreduce(n, BLOCK_MAPS, INPUT_REDUCES, rng, k * PURDUE_INTERVAL_S) for k, n in enumerate(names)]


def tpch(rng: np.random.Generator) -> list[MacroJob]:
    return [_mapreduce(f"Q{q}", BLOCK_MAPS, INPUT_REDUCES, rng, None) for _ in range(5) for q in (1, 9, 12, 17)]


def spark(rng: np.random.Generator) -> list[MacroJob]:
    return [MacroJob(app, ((SPARK_EXECUTORS, SPARK_ITERATIONS * _time(rng)),), None, SPARK_GAP_S)
            for _ in range(10) for app in ("kmeans", "ALS")]


def macro_workload(seed: int, trace: str | Path, *, fb_time_scale: float = 1.0) -> dict[str, list[MacroJob]]:
    """The four workloads of Sec. 7.2 for one seed (module docstring); ``fb_time_scale`` multiplies
    Facebook's submit times (1: the trace's)."""
    rng = np.random.default_rng([seed, 2016])
    return {"facebook": facebook(rng, trace, fb_time_scale), "purdue": purdue(rng), "tpch": tpch(rng), "spark": spark(rng)}
