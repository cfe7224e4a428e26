"""The "published schedulers" study's set-up: traces, windows, clusters and the nine configurations.

Every choice the papers leave open is fixed here, before any result was seen,
and stated on the experiment's page (``DESCRIPTION``):

* **Replicas.** Seed s of trace k replays a window of the trace whose start is
  drawn uniformly (``numpy.random.default_rng([k, s])``) over the trace's span;
  a window with fewer than 20 jobs is drawn again. FB-2009's jobs get one of 8
  users, drawn with the seed (SWIM has no user column), in 2 groups.
* **Windows.** FB-2009 2 h, KTH-SP2 7 days, LCG 2 h (``quick``: 15 min, 12 h,
  15 min).
* **Queues.** FB-2009: ``root.g<k mod 2>.u<k>``; KTH-SP2: its users as leaves of
  a flat tree; LCG: its groups, then their users. Equal weights.
* **Load** (two steps; the second added after the first gave FB-2009 windows
  a mean utilisation of 0.67, below the 70 % the study set out to load, and before any
  comparison under it was seen). (1) Each resource type gets
  ``C_j = ceil(W_j / (0.9 * window))`` units, where ``W_j`` is the work the
  window's jobs would do inside the window on an infinite cluster: each job's
  first stage starts at its submit time and each later stage when the one
  before ends (offered load 0.9 during the window; long jobs run on after it);
  when an SWF job is wider than that, ``C`` is its width and the window's
  arrivals are compressed (submit times times ``s < 1``, by bisection) back to
  an offered load of 0.9. (2) A reference run (H-LTRF) measures each type's
  busy fraction over the window; a type below ``BUSY_MIN`` = 0.75 shrinks to
  ``ceil(C_j * busy_j / BUSY_TARGET)`` (``BUSY_TARGET`` = 0.8; never below the
  widest SWF job), at most ``CALIBRATION_STEPS`` = 3 times. FB-2009 needs it:
  its bursts leave work queued at the window's end and its reduce stage waits
  for the maps. A type never shrinks below an offered load of ``LOAD_MAX`` =
  1.0 (above it the backlog grows through the window and the comparison
  becomes one of draining order). The utilisation reported is the cluster's
  busy unit-seconds over its unit-seconds in the window, every unit counted
  once (the first version averaged the types' fractions, so FB-2009's few
  reduce slots, idle while their maps run, weighed as much as all its map
  slots).
* **Jobs.** SWIM bytes become tasks by ``SwimRule()`` (map then reduce stages);
  an SWF job is ``procs`` one-processor tasks of its run time. Every job bids a
  budget U[50, 200] and weights U[0.5, 2] (paper 000's set-up,
  ``simulator.runner.draw_bid``); its value (welfare) is its budget and its
  deadline ``submit + 3 x`` its ideal run time (``simulator.outcomes``).
* **Configurations** (``CONFIGS``; the controls dated 2026-11-28, chosen before
  any of their results was seen): every queue-level policy without money
  (H-LTRF, DRF, Slurm, Karma) runs twice, the oldest job of a leaf queue first
  (FIFO dispatch) and equal shares of the queue's units among its jobs (stride
  dispatch, "+ equal share"); Abacus is a market over H-LTRF (its auction's
  shares, stride dispatch), ERA's reservations a market over H-LTRF (the
  rejected jobs best-effort, FIFO inside a queue). The job-level policies:
  Tiresias (the authors' two queues) and its three-limit variant, Themis with
  exact sizes and with sizes estimated from attained service, and SRPT with
  the same exact sizes as Themis' oracle variant (the control for reading
  sizes). ``Config.sizes`` says what a configuration reads before a job runs.
  LTRF's usage counts a task's duration when it starts.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from scheduler.fairshare.fairness import QueueTree
from simulator.era.bookings import era_decide
from simulator.experiments.ltrf.traces import SEARCH, trace_path
from simulator.outcomes import trace_terms
from simulator.runner import MarketParams, RunResult, draw_bid
from simulator.runner import run as run_market
from simulator.whatif.run import compact_result
from simulator.workloads.traces import SwimRule, TraceJob, load_swf, load_swim

SWIM_FILE = "FB-2009_samples_24_times_1hr_0.tsv"
TRACES: dict[str, str] = {"fb2009": "FB-2009", "kth": "KTH-SP2", "lcg": "LCG"}
WINDOW_H = {"fb2009": 2.0, "kth": 168.0, "lcg": 2.0}
QUICK_WINDOW_H = {"fb2009": 0.25, "kth": 12.0, "lcg": 0.25}
SLOT_S = {"fb2009": 60.0, "kth": 600.0, "lcg": 60.0}  # ERA's slot length per trace
LOAD = 0.9
BUSY_MIN, BUSY_TARGET, CALIBRATION_STEPS, LOAD_MAX = 0.75, 0.8, 3, 1.0  # step (2) of the load rule (module docstring)
MIN_JOBS = 20
SAMPLES = 50  # fairness samples over the window (the last one at its end)
T_WAIT_S = 60.0
SLURM_HALF_LIFE_S = 7 * 86400.0  # Slurm's default PriorityDecayHalfLife (7 days)
DEADLINE_FACTOR = 3.0
ERA_WINDOW_FACTOR = 3.0
FB_USERS, FB_GROUPS = 8, 2


@dataclass(frozen=True)
class Config:
    """One compared configuration: its label, the market's settings, whether it has money, what
    decides inside a queue (``inside``) and which sizes it reads before a job runs (``sizes``)."""

    label: str
    params: MarketParams
    money: bool = False
    era: bool = False
    inside: str = "FIFO"
    sizes: str = "none"


_FIFO = MarketParams(mechanism="equal", dispatch="fifo")
_SHARE = MarketParams(mechanism="equal", dispatch="stride")  # equal shares of a queue's units among its jobs
_TASK = "task durations at start"  # LTRF's usage: a task's duration counts when it starts
_ORACLE = "exact job sizes"  # every task count and duration of a job before it runs
_ACROSS = "jobs ranked across queues"
_HLTRF = replace(_FIFO, fairshare="hltrf", t_wait=T_WAIT_S)
_SLURM = replace(_FIFO, fairshare="slurm", history="decay", history_length=SLURM_HALF_LIFE_S)
CONFIGS: tuple[Config, ...] = (
    Config("LTRF", replace(_FIFO, fairshare="ltrf"), sizes=_TASK),
    Config("H-LTRF", _HLTRF, sizes=_TASK),
    Config("H-LTRF + equal share", replace(_HLTRF, dispatch="stride"), inside="equal share (stride)", sizes=_TASK),
    Config("Abacus over H-LTRF", replace(_HLTRF, mechanism="abacus", alpha=0.5, dispatch="stride"), money=True,
           inside="budget auction's shares (stride)", sizes=_TASK),
    Config("ERA reservations over H-LTRF", _HLTRF, money=True, era=True, inside="reservations, then FIFO", sizes=_ORACLE),
    Config("DRF", replace(_FIFO, fairshare="drf")),
    Config("DRF + equal share", replace(_SHARE, fairshare="drf"), inside="equal share (stride)"),
    Config("Slurm", _SLURM),
    Config("Slurm + equal share", replace(_SLURM, dispatch="stride"), inside="equal share (stride)"),
    Config("Karma", replace(_FIFO, fairshare="karma")),
    Config("Karma + equal share", replace(_SHARE, fairshare="karma"), inside="equal share (stride)"),
    Config("Tiresias", replace(_FIFO, fairshare="tiresias"), inside=_ACROSS),
    Config("Tiresias, three limits", replace(_FIFO, fairshare="tiresias3"), inside=_ACROSS),
    Config("Themis (exact sizes)", replace(_FIFO, fairshare="themis"), inside=_ACROSS, sizes=_ORACLE),
    Config("Themis (attained service)", replace(_FIFO, fairshare="themis_est"), inside=_ACROSS, sizes="task counts"),
    Config("SRPT (exact sizes)", replace(_FIFO, fairshare="srpt"), inside=_ACROSS, sizes=_ORACLE),
)
LABELS: tuple[str, ...] = tuple(c.label for c in CONFIGS)
REFERENCE = CONFIGS[1]  # H-LTRF: the load rule's reference run and the paired baseline


@dataclass(frozen=True)
class Cell:
    """One replica of one trace: its jobs, queue tree, cluster and what was chosen."""

    trace: str
    seed: int
    jobs: list[TraceJob]
    tree: QueueTree
    leaf_of_user: dict[str, int]
    capacity: list[int]
    start_h: float
    hours: float
    time_scale: float

    @property
    def window_s(self) -> float:
        """The window's length after compression, seconds."""
        return self.hours * 3600.0 * self.time_scale


@functools.lru_cache(maxsize=4)
def _swf(trace: str) -> tuple[TraceJob, ...]:
    return tuple(load_swf(trace_path(trace)))


@functools.lru_cache(maxsize=4)
def _swim(seed: int) -> tuple[TraceJob, ...]:
    path = next((folder / SWIM_FILE for folder in SEARCH if (folder / SWIM_FILE).exists()), SEARCH[0] / SWIM_FILE)
    return tuple(load_swim(path, rule=SwimRule(), users=FB_USERS, groups=FB_GROUPS, seed=seed))


def all_jobs(trace: str, seed: int) -> tuple[TraceJob, ...]:
    """Every job of the trace (FB-2009: its users drawn with ``seed``), times from its first job."""
    if trace == "fb2009":
        return _swim(seed)
    if trace in ("kth", "lcg"):
        return _swf(trace)
    raise ValueError(f"unknown trace {trace!r}; choose one of {sorted(TRACES)}")


def window(trace: str, seed: int, hours: float) -> tuple[float, list[TraceJob]]:
    """``(start hour, jobs)`` of the seed's window, times shifted to its start (module docstring)."""
    jobs = all_jobs(trace, seed)
    span = max(j.submit_time for j in jobs) / 3600.0
    rng = np.random.default_rng([sorted(TRACES).index(trace), seed])
    for _ in range(100):
        start = float(rng.uniform(0.0, max(span - hours, 0.0)))
        lo, hi = start * 3600.0, (start + hours) * 3600.0
        picked = [replace(j, submit_time=j.submit_time - lo) for j in jobs if lo <= j.submit_time < hi]
        if len(picked) >= MIN_JOBS:
            return start, picked
    raise ValueError(f"{trace}: no window of {hours} h with {MIN_JOBS} jobs")


def tree_of(trace: str, jobs: list[TraceJob]) -> tuple[QueueTree, dict[str, int]]:
    """The queue tree of the trace (module docstring) and user -> leaf position."""
    if trace == "fb2009":
        paths = {f"root.g{k % FB_GROUPS}.u{k}": 1.0 for k in range(FB_USERS)}
        path_of = {f"u{k}": f"root.g{k % FB_GROUPS}.u{k}" for k in range(FB_USERS)}
    elif trace == "kth":
        path_of = {j.user: f"root.{j.user}" for j in jobs}
        paths = dict.fromkeys(path_of.values(), 1.0)
    else:
        path_of = {j.user: f"root.{j.group}.{j.user}" for j in jobs}
        paths = dict.fromkeys(path_of.values(), 1.0)
    tree = QueueTree.from_paths(paths)
    position = {name: k for k, name in enumerate(tree.leaf_names)}
    return tree, {user: position[p] for user, p in path_of.items()}


def offered_work(jobs: list[TraceJob], seconds: float) -> list[float]:
    """Unit-seconds per type the jobs would use inside ``[0, seconds)`` on an infinite cluster,
    each job's stages in type order (the runner's ``staged``): the first stage with tasks starts
    at the submit time, each later one when the one before ends. The window's offered work;
    list of length m (resource types)."""
    m = len(jobs[0].tasks)
    work = [0.0] * m
    for j in jobs:
        begin = j.submit_time
        for t in range(m):
            if j.tasks[t] == 0:
                continue
            work[t] += j.tasks[t] * min(j.task_duration[t], max(seconds - begin, 0.0))
            begin += j.task_duration[t]
    return work


def cluster_for(jobs: list[TraceJob], hours: float) -> tuple[list[int], float, list[TraceJob]]:
    """``(capacity, time scale, jobs)`` at offered load ``LOAD`` in the window (module docstring)."""
    seconds = hours * 3600.0
    capacity = [max(1, math.ceil(w / (LOAD * seconds))) for w in offered_work(jobs, seconds)]
    if len(capacity) > 1 or max(j.tasks[0] for j in jobs) <= capacity[0]:
        return capacity, 1.0, jobs
    capacity = [max(j.tasks[0] for j in jobs)]  # a wider SWF job: compress the arrivals instead

    def load(scale: float) -> float:
        squeezed = [replace(j, submit_time=j.submit_time * scale) for j in jobs]
        return offered_work(squeezed, scale * seconds)[0] / (capacity[0] * scale * seconds)

    lo, hi = 1e-3, 1.0
    for _ in range(40):  # the load falls as the arrivals spread out: bisect for LOAD
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if load(mid) > LOAD else (lo, mid)
    return capacity, hi, [replace(j, submit_time=j.submit_time * hi) for j in jobs]


def make_cell(trace: str, seed: int, quick: bool) -> Cell:
    """The seed's replica of ``trace`` (window, tree, cluster; module docstring, both load steps)."""
    return calibrated_cell(trace, seed, quick)[0]


def calibrated_cell(trace: str, seed: int, quick: bool) -> tuple[Cell, RunResult | None]:
    """:func:`make_cell`, with the reference run (``REFERENCE``) at the final capacity when the
    calibration made one (it stopped before its last step), else None."""
    hours = (QUICK_WINDOW_H if quick else WINDOW_H)[trace]
    start, jobs = window(trace, seed, hours)
    capacity, scale, jobs = cluster_for(jobs, hours)
    tree, leaf = tree_of(trace, jobs)
    cell = Cell(trace, seed, jobs, tree, leaf, capacity, start, hours, scale)
    stable = [max(1, math.ceil(w / (LOAD_MAX * cell.window_s))) for w in offered_work(jobs, cell.window_s)]
    floor = capacity if scale < 1.0 else stable  # offered load <= LOAD_MAX; a compressed SWF cell keeps its widest job's width
    for _ in range(CALIBRATION_STEPS):
        reference = _replay(cell, REFERENCE)
        busy = _busy(reference, cell)
        if len(busy) != len(cell.capacity):  # no sample at the window's end: nothing to calibrate on
            return cell, reference
        shrunk = [max(lo, math.ceil(c * float(b) / BUSY_TARGET)) if b < BUSY_MIN else c
                  for c, b, lo in zip(cell.capacity, busy, floor, strict=True)]
        if shrunk == cell.capacity:
            return cell, reference
        cell = replace(cell, capacity=shrunk)
    return cell, None


def _params(cell: Cell, config: Config) -> MarketParams:
    """``config``'s market settings on ``cell``: its seed, staged jobs with known durations, ``SAMPLES`` samples."""
    return replace(config.params, seed=cell.seed, staged=True, known_durations=True, sample_interval=cell.window_s / SAMPLES)


def _replay(cell: Cell, config: Config, bookings: dict[int, Any] | None = None) -> RunResult:
    """``config`` replaying ``cell``'s jobs on its cluster."""
    return run_market(cell.jobs, tree=cell.tree, leaf_of_user=cell.leaf_of_user, capacity=cell.capacity,
                      params=_params(cell, config), bookings=bookings)  # fmt: skip


def busy_fractions(cell: Cell, config: Config) -> list[float]:
    """Each type's busy fraction over the cell's window under ``config``: length m, each in [0, 1]."""
    return [float(b) for b in _busy(_replay(cell, config), cell)]


def run_config(cell: Cell, config: Config, replayed: RunResult | None = None) -> dict[str, Any]:
    """One configuration on one replica: ``compact_result``'s metrics plus ERA's and the cell's figures.
    ``replayed``: this configuration's run on the cell, when already made (the calibration's reference)."""
    m = len(cell.capacity)
    params = _params(cell, config)
    bids = {j.job_id: draw_bid(j, params, m) for j in cell.jobs}
    bookings, era_revenue = {}, 0.0
    if config.era:
        history = {j.job_id: draw_bid(j, replace(params, seed=params.seed + 1000), m).budget for j in cell.jobs}
        outcome = era_decide(cell.jobs, cell.capacity, {k: b.budget for k, b in bids.items()}, history,
                             slot_s=SLOT_S[cell.trace], window_factor=ERA_WINDOW_FACTOR)  # fmt: skip
        bookings, era_revenue = outcome.bookings, outcome.revenue
    result = replayed if replayed is not None and not config.era else _replay(cell, config, bookings)
    terms = trace_terms(cell.jobs, {k: b.budget for k, b in bids.items()}, DEADLINE_FACTOR,
                        {k: b.weights for k, b in bids.items()}, {k: b.utility for k, b in bids.items()})  # fmt: skip
    metrics = dict(compact_result(cell.jobs, result, list(cell.tree.leaf_names), terms)["metrics"])
    metrics["utilisation"] = window_utilisation(result, cell)
    metrics["payments"] = (era_revenue if config.era else metrics["revenue"]) if config.money else None
    metrics["reserved_jobs"] = len(bookings) if config.era else None
    about = {"jobs": len(cell.jobs), "capacity": cell.capacity, "start_h": round(cell.start_h, 3), "time_scale": round(cell.time_scale, 4)}
    return {"trace": cell.trace, "seed": cell.seed, "policy": config.label, "metrics": metrics, "cell": about}


def _busy(result: RunResult, cell: Cell) -> np.ndarray:
    """Busy fraction per type over the window (from the first arrival); empty if no sample falls at its end."""
    end = result.start_time + cell.window_s
    at = [s for s in result.samples if abs(s.time - end) <= 1e-6 * max(1.0, end)]
    if not at:
        return np.zeros(0)
    return np.asarray(at[0].usage.sum(axis=0) / (np.asarray(cell.capacity, dtype=np.float64) * cell.window_s))


def window_utilisation(result: RunResult, cell: Cell) -> float | None:
    """Busy fraction of the cluster over the window (from the first arrival): busy unit-seconds of
    every type over the cluster's unit-seconds (each unit counts once, whatever its type); None if
    no sample falls at the window's end."""
    busy = _busy(result, cell)
    if not busy.size:
        return None
    units = np.asarray(cell.capacity, dtype=np.float64)
    return float(busy @ units / units.sum())


def run_cell(trace: str, seed: int, quick: bool, labels: tuple[str, ...] = LABELS) -> list[dict[str, Any]]:
    """Every configuration named in ``labels`` on the seed's replica of ``trace`` (a unit of work for a worker)."""
    cell, reference = calibrated_cell(trace, seed, quick)
    return [run_config(cell, c, reference if c is REFERENCE else None) for c in CONFIGS if c.label in labels]
