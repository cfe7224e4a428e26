"""Paper 003's experiment (Sec. 5) in simulation: deadline extension ratios under competition.

Set-up, after Sec. 5.1:

* a fixed cluster of ``nodes`` machines (the paper: 10 physical nodes of 8
  cores); each node offers ``cores`` units on each of the R = 3 execution
  dimensions (one per matrix operation: multiply, QR solve, power), at unit
  prices 1, 2, 3 (the paper's users' prices);
* a task (a user request) is 3-15 subtasks, each a matrix operation drawn
  from Table 1 (loads in core-seconds); a task's workload vector sums its
  subtasks' loads per operation, and its phases run one after another
  (``theta = 1``);
* estimates (``error_model``). ``"eq23"`` (the default): the paper's own predictor,
  Eq. 23, estimates an operation's work as the mean over j = 1..8 cores of the
  core-seconds ``j * T(op, j)``, while a run on r cores really does ``r * T(op, r)``.
  The paper prints only the one-core times (Table 1), so the scaling is ours:
  Amdahl's law, ``T(op, j) = T1 (s + (1 - s) / j)``, one serial fraction s for
  every operation, fixed so that the lowest ratio estimate / real (a run on all
  8 cores) is the paper's alpha ~ 0.7 ("the lower bound of the workload
  predicted ... is always lower than the real workload", Sec. 5.2; "about 30 %
  margin of errors"). A run on r <= 1 core does T1; more cores do more work, so
  the error depends on the vector Algorithm 1 picks, as on the paper's cluster.
  ``"uniform"`` (the earlier model, kept as an option): each subtask's estimate
  is its load times U[alpha_err, beta_err];
* the deadline is U[T1/8, T1], ``T1`` the estimated time on one core (Sec. 5.1);
* 1 to 40 tasks are submitted together at t = 0; the scheduler serves them
  first come, first served (the paper: "the ones arriving earlier would be
  treated with higher service level"): a task gets paper 003's Algorithm 1
  on the nodes' current availability (the cheapest node that meets its
  planning deadline), planned with D (``planning = 1``) or D' = alpha_err D.
  A task no node can serve in time takes the whole availability of the node
  that finishes it soonest (Alg. 1's infeasible case) if that node offers at
  least ``min_units`` on every dimension, and otherwise waits for the next
  completion and is planned again with what remains of its deadline; with
  ``wait="lookahead"`` (the default) it also waits when the next completion
  would let it finish sooner, with ``wait="start"`` it never waits while a node
  offers ``min_units`` (the waiting rule's isolation). A task
  holds its vector on its node until it really finishes (pay-by-reserve).

The measure is the deadline extension ratio ``DER = finish time / D`` (Sec. 5.2),
with ``D`` counted from the submission at t = 0, and Jain's index over the DERs
of one case (Eq. 24). Modelling choices beyond the paper (the waiting rule,
``min_units``, per-subtask errors) are named above; a real cluster's
interference between VMs is not modelled.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scheduler.deadline.payment import min_payment

FloatArray = NDArray[np.float64]

# Paper 003, Table 1: loads of the matrix operations on one core, seconds.
TABLE_1: dict[str, tuple[float, ...]] = {
    "multiply": (1.08, 13.7, 31.0, 40.2, 118.0, 242.0),
    "qr_solve": (1.39, 6.1, 10.5, 14.1, 27.9, 51.0),
    "power": (3.65, 4.2, 55.0, 67.2, 457.7, 1206.0),
}
OPERATIONS = tuple(TABLE_1)
PRICES = (1.0, 2.0, 3.0)  # the paper's prices of the three operations


ERROR_MODELS = ("eq23", "uniform", "exact")
WAIT_RULES = ("lookahead", "start")


@dataclass(frozen=True)
class MatrixTask:
    """One user request: real and estimated work per operation (core-seconds), deadline (s).

    ``real`` is the work on one core; with ``serial`` (Amdahl's serial fraction, the
    ``eq23`` model) a run at r_k cores does ``real_k (1 + serial (max(r_k, 1) - 1))``
    core-seconds, else exactly ``real``.
    """

    real: FloatArray
    estimate: FloatArray
    deadline: float
    serial: float | None = None

    def work(self, r: FloatArray) -> FloatArray:
        """Core-seconds per operation when run at the rate vector ``r`` (units)."""
        if self.serial is None:
            return self.real
        out: FloatArray = self.real * (1.0 + self.serial * (np.maximum(r, 1.0) - 1.0))
        return out


def serial_fraction(alpha_err: float, cores: int = 8) -> float:
    """Amdahl's serial fraction s at which Eq. 23's estimate is ``alpha_err`` times a run on ``cores`` cores.

    The estimate is ``T1 (1 + s (cores - 1) / 2)`` (the mean of ``j T(op, j)`` over j = 1..cores),
    a run on ``cores`` cores does ``T1 (1 + s (cores - 1))``.

    Raises:
        ValueError: alpha_err outside (0.5, 1) (no such s in (0, 1]).
    """
    half = (cores - 1) / 2.0
    s = (1.0 - alpha_err) / (alpha_err * (cores - 1) - half)
    if not (0.5 < alpha_err < 1.0 and 0.0 < s <= 1.0):
        raise ValueError("alpha_err must lie in (0.5, 1) for the eq23 model")
    return s


def paper_tasks(m: int, rng: np.random.Generator, *, alpha_err: float = 0.7, beta_err: float = 1.3,
                model: str = "eq23") -> list[MatrixTask]:
    """``m`` tasks as in Sec. 5.1 (module docstring), in submission order.

    Raises:
        ValueError: an unknown error model.
    """
    if model not in ERROR_MODELS:
        raise ValueError(f"unknown error model {model!r}; expected one of {ERROR_MODELS}")
    serial = serial_fraction(alpha_err) if model == "eq23" else None
    tasks = []
    for _ in range(m):
        real, est = np.zeros(len(OPERATIONS)), np.zeros(len(OPERATIONS))
        for _ in range(int(rng.integers(3, 16))):
            k = int(rng.integers(len(OPERATIONS)))
            load = TABLE_1[OPERATIONS[k]][int(rng.integers(len(TABLE_1[OPERATIONS[k]])))]
            real[k] += load
            noise = float(rng.uniform(alpha_err, beta_err))  # drawn in every model: the same tasks and deadlines
            est[k] += load * (noise if model == "uniform" else 1.0)
        if serial is not None:
            est = real * (1.0 + serial * 3.5)  # Eq. 23: the mean of j T(op, j) over j = 1..8
        t1 = float(est.sum())  # "the estimated execution time when running the task on a particular core"
        tasks.append(MatrixTask(real, est, float(rng.uniform(t1 / 8, t1)), serial))
    return tasks


def jain_index(x: FloatArray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` in (0, 1] (paper 003, Eq. 24)."""
    x = np.asarray(x, dtype=np.float64)
    return float(x.sum() ** 2 / (x.size * np.sum(x * x))) if x.size and np.any(x) else 1.0


def run_case(
    tasks: list[MatrixTask], *, planning: float, nodes: int = 10, cores: float = 8.0, min_units: float = 1.0,
    starts: list[float] | None = None, wait: str = "lookahead",
) -> FloatArray:
    """Serve ``tasks`` (all submitted at t = 0) on the cluster; the (m,) DERs.

    Args:
        planning: the factor on each deadline the scheduler plans with (1 for D,
            alpha_err for D' = alpha_err D, paper 003 Eq. 22).
        nodes, cores: the cluster (units per node on every dimension).
        min_units: least units per dimension a task accepts in Alg. 1's infeasible case.
        starts: if given, filled with each task's start time / its deadline (the wait's share of its DER).
        wait: "lookahead" or "start" (module docstring).

    Raises ValueError on an unknown ``wait``; RuntimeError when a task can never start.
    """
    if wait not in WAIT_RULES:
        raise ValueError(f"wait must be one of {WAIT_RULES}")
    R = len(OPERATIONS)
    free = np.full((nodes, R), float(cores))
    prices = np.tile(np.array(PRICES), (nodes, 1))
    waiting = list(range(len(tasks)))
    running: list[tuple[float, int, int, tuple[float, ...]]] = []  # (finish, task, node, vector)
    finish = np.full(len(tasks), math.inf)
    begin = np.full(len(tasks), math.inf)
    now = 0.0
    while waiting:
        still = []
        for i in waiting:
            nxt = (running[0][0], running[0][2], np.array(running[0][3])) if running and wait == "lookahead" else None
            start = _try_start(tasks[i], planning, now, free, prices, min_units, nxt)
            if start is None:
                still.append(i)
                continue
            node, r = start
            work = tasks[i].work(r)
            t_real = float(np.sum(work[work > 0] / r[work > 0]))
            begin[i], finish[i] = now, now + t_real
            free[node] -= r
            heapq.heappush(running, (finish[i], i, node, tuple(r.tolist())))
        waiting = still
        if waiting:
            if not running:
                raise RuntimeError("a task can never start: min_units exceeds a node's capacity")
            now, _, node, held = heapq.heappop(running)
            free[node] += np.array(held)
            while running and running[0][0] <= now:  # release everything finishing at this instant
                _, _, node2, held2 = heapq.heappop(running)
                free[node2] += np.array(held2)
    if starts is not None:
        starts[:] = [begin[i] / t.deadline for i, t in enumerate(tasks)]
    return np.array([finish[i] / t.deadline for i, t in enumerate(tasks)])


def _try_start(
    task: MatrixTask, planning: float, now: float, free: FloatArray, prices: FloatArray, min_units: float,
    next_release: tuple[float, int, FloatArray] | None,
) -> tuple[int, FloatArray] | None:
    """(node, vector) if the task starts now, else None (it waits; module docstring's rule).

    Alg. 1 at the planning deadline on the nodes offering ``min_units`` of every
    dimension; when no node meets it, the whole availability of the node that
    finishes the task soonest, unless waiting for the next completion
    (``next_release``: time, node, vector released) would finish it sooner.
    """
    work = task.estimate > 0
    usable = np.all(free[:, work] >= min_units, axis=1)
    room = planning * task.deadline - now
    if room > 0 and usable.any():
        x = min_payment(task.estimate, room, prices[usable], free[usable], theta=1.0)
        if x.feasible:
            return int(np.flatnonzero(usable)[x.node]), x.resources
    node, t_now = _fastest(task, free, usable)
    if next_release is not None:
        t1, released_on, vector = next_release
        after = free.copy()
        after[released_on] += vector
        _, t_after = _fastest(task, after, np.all(after[:, work] >= min_units, axis=1))
        if t1 + t_after < now + t_now:
            return None
    return None if node < 0 else (node, np.where(work, free[node], 0.0))


def _fastest(task: MatrixTask, free: FloatArray, usable: NDArray[np.bool_]) -> tuple[int, float]:
    """(node, seconds) of the usable node that runs the task soonest on all it has; (-1, inf) if none."""
    work = task.estimate > 0
    if not usable.any():
        return -1, math.inf
    times = np.where(usable, np.sum(task.estimate[work] / np.where(free[:, work] > 0, free[:, work], np.nan), axis=1), np.inf)
    node = int(np.nanargmin(times))
    return node, float(times[node])


@dataclass(frozen=True)
class DERResult:
    """Per level of competition m (tasks submitted together) and planning rule.

    Attributes:
        levels: (L,) the m values.
        low, mean, high: {"D": (L,), "D'": (L,)} lowest, mean and highest DER.
        jain: {"D": (L,), "D'": (L,)} Jain's index over the case's DERs.
        at_max: {"D": (m_max,), "D'": (m_max,)} every DER of the largest level.
        late: {"D": (L,), "D'": (L,)} number of tasks with DER > 1 per level.
        alone_infeasible: tasks (over all levels) that even a whole empty node
            cannot finish by D' (Lemma 1 fails: ``sum l' / cores > alpha_err D``).
        total_tasks: tasks over all levels.
        worst_wait: {"D": (L,), "D'": (L,)} the start (/ its deadline) of the task with the highest
            DER per level: the part of that DER spent waiting for units.
    """

    levels: NDArray[np.int64]
    low: dict[str, FloatArray]
    mean: dict[str, FloatArray]
    high: dict[str, FloatArray]
    jain: dict[str, FloatArray]
    at_max: dict[str, FloatArray]
    late: dict[str, FloatArray] | None = None
    alone_infeasible: int = 0
    total_tasks: int = 0
    worst_wait: dict[str, FloatArray] | None = None


def der_experiment(
    levels: range | list[int] = range(1, 41), *, seed: int = 0, alpha_err: float = 0.7, beta_err: float = 1.3,
    nodes: int = 10, cores: float = 8.0, min_units: float = 1.0, progress: Callable[[float, str], None] | None = None,
    model: str = "eq23", wait: str = "lookahead",
) -> DERResult:
    """Paper 003, Sec. 5.2 (Figs. 4-6): for each m, one case of m tasks (seeded), served
    once planning with D and once with D' = alpha_err D (the same tasks; Eq. 22). ``progress``
    is called with (fraction done, message) before each level; ``model`` is the error model, ``wait`` the waiting rule."""
    rules = {"D": 1.0, "D'": alpha_err}
    keys = ("low", "mean", "high", "jain", "late", "worst_wait")
    out: dict[str, dict[str, list[float]]] = {k: {r: [] for r in rules} for k in keys}
    at_max: dict[str, FloatArray] = {}
    alone = 0
    for step, m in enumerate(levels):
        if progress is not None:
            progress(step / len(levels), f"{m} tasks submitted together")
        tasks = paper_tasks(m, np.random.default_rng([seed, m]), alpha_err=alpha_err, beta_err=beta_err, model=model)
        alone += sum(float(t.estimate.sum()) / cores > alpha_err * t.deadline for t in tasks)
        for rule, factor in rules.items():
            starts: list[float] = []
            der = run_case(tasks, planning=factor, nodes=nodes, cores=cores, min_units=min_units, starts=starts, wait=wait)
            out["worst_wait"][rule].append(float(starts[int(np.argmax(der))]))
            out["low"][rule].append(float(der.min()))
            out["mean"][rule].append(float(der.mean()))
            out["high"][rule].append(float(der.max()))
            out["jain"][rule].append(jain_index(der))
            out["late"][rule].append(float(np.sum(der > 1.0 + 1e-9)))
            if m == max(levels):
                at_max[rule] = der
    arr = {k: {r: np.array(v) for r, v in d.items()} for k, d in out.items()}
    lv = np.array(list(levels), dtype=np.int64)
    return DERResult(lv, arr["low"], arr["mean"], arr["high"], arr["jain"], at_max, arr["late"], int(alone), int(lv.sum()),
                     arr["worst_wait"])


def der_shares(der: FloatArray) -> dict[str, float]:
    """The paper's Fig. 5 reading: fractions of tasks with DER in [0.95, 1.0], above 1,
    and in (1, 1.05]."""
    der = np.asarray(der)
    n = max(der.size, 1)
    return {
        "within_0.95_1.0": float(np.sum((der >= 0.95) & (der <= 1.0)) / n),
        "late": float(np.sum(der > 1.0) / n),
        "late_within_1.05": float(np.sum((der > 1.0) & (der <= 1.05)) / n),
    }
