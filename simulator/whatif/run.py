"""The simulation lab's run: one workload, one cluster, one market configuration.

A what-if run (README, "Simulation lab"; paper 001, Sec. 2-4: "the same core code" connected
to a simulated cloud, with system and economic metrics) is
:func:`simulate`: a trace window (SWIM TSV or SWF, with slice, time scaling
and tenant mapping, :class:`WorkloadSpec`) replayed by
:func:`simulator.runner.run` (the live market's engine) under one
configuration (:class:`ConfigSpec`: registry names and parameters), and
reduced to a compact, JSON-serialisable result (:func:`compact_result`):
time series on the fairness-sample grid, the clearing prices downsampled
(min/max per bucket), per-job records in columns and headline metrics.
Nothing here imports Django; the lab (``marketplace``) and ``manage.py
simulate`` both call it.
"""

from __future__ import annotations

import itertools
import math
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree
from simulator.outcomes import deadline_met, realised_utility, trace_terms, utility_total, welfare
from simulator.runner import MarketParams, RunResult, draw_bid, run
from simulator.scorecard import finish_time_fairness, rho_summary
from simulator.workloads.synthetic import GENERATOR_DEFAULTS, GENERATOR_PARAMETER, GeneratorSpec, JobTerms, generate
from simulator.workloads.traces import SwimRule, TraceJob, TraceLimits, load_swf, load_swim

REPO_TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"
FB2009 = REPO_TRACES / "FB-2009_samples_24_times_1hr_0.tsv"
MAX_SERIES_POINTS = 1000  # per trace sent to the browser (2 x 1000 for min/max buckets)

Observer = Callable[[float, int, int], None]


@dataclass(frozen=True)
class WorkloadSpec:
    """Which jobs a run replays.

    Attributes:
        trace: path of a SWIM ``.tsv`` or an SWF ``.swf``/``.swf.gz`` file.
        trace_format: "swim", "swf" or "auto" (by the file name).
        start_hour, hours: the slice ``[start_hour, start_hour + hours)``
            hours of the trace's clock (SWF: from its first job).
        time_scale: submit times are multiplied by it (0.5 = arrivals twice
            as dense, the same jobs); > 0.
        tenants: jobs are mapped to this many tenants ``u0..u{K-1}`` (leaf
            queues), K >= 1: SWIM draws each job's tenant with ``seed``
            (``load_swim``), SWF maps its user ``u<id>`` to ``u<crc32 mod K>``
            (a user stays one tenant).
        groups: tenant ``u<k>`` is in group ``g<k mod groups>`` (the queue
            tree is ``root.g*.u*``).
        max_jobs: keep at most this many jobs (the earliest); 0 = all.
        seed: seed of the SWIM tenant draw, and of a synthetic generator.
        generator: "" replays ``trace``; else a name in
            ``simulator.workloads.synthetic.GENERATORS`` (Abacus Table 1, ERA's job
            classes, Cura's size mix) generating ``hours`` of arrivals
            (``start_hour`` and ``time_scale`` do not apply; ``rate_scale``
            scales its arrival rates).
        deadline_factor: a trace job's (and a Table 1 job's) deadline is its
            submit time plus this many ideal run times (``simulator.outcomes``).
        era_slack, cura_max_deadline_s: the ERA and Cura generators' deadline
            parameters (``simulator.workloads.synthetic``).
    """

    trace: str = str(FB2009)
    trace_format: str = "auto"
    start_hour: float = 0.0
    hours: float = 2.0
    time_scale: float = 1.0
    tenants: int = 8
    groups: int = 2
    max_jobs: int = 0
    seed: int = 0
    generator: str = ""
    rate_scale: float = GENERATOR_DEFAULTS["rate_scale"]
    deadline_factor: float = GENERATOR_DEFAULTS["deadline_factor"]
    era_slack: float = GENERATOR_DEFAULTS["era_slack"]
    cura_max_deadline_s: float = GENERATOR_DEFAULTS["cura_max_deadline_s"]

    def synthetic(self) -> GeneratorSpec:
        """The generator's spec (``generator`` set)."""
        return GeneratorSpec(self.generator, hours=self.hours, rate_scale=self.rate_scale, tenants=self.tenants,
                             deadline_factor=self.deadline_factor, era_slack=self.era_slack,
                             cura_max_deadline_s=self.cura_max_deadline_s, seed=self.seed)  # fmt: skip

    def tenant_count(self) -> int:
        """Leaf queues of the run: Table 1's 3 users, else ``tenants``."""
        return 3 if self.generator == "abacus_table1" else self.tenants

    def kind(self) -> str:
        """"swim", "swf", "jobs" (a live market's jobs, :func:`load_jobs_doc`) or "synthetic". Raises ValueError on an unknown format."""
        if self.generator:
            return "synthetic"
        if self.trace_format in ("swim", "swf", "jobs"):
            return self.trace_format
        if self.trace_format != "auto":
            raise ValueError(f"trace_format: {self.trace_format!r} is not swim, swf, jobs or auto")
        name = Path(self.trace).name.lower()
        return "swf" if name.endswith((".swf", ".swf.gz")) else "jobs" if name.endswith(".json") else "swim"

    def check(self) -> None:
        """Raise ValueError (message starts with the field name) on bad values."""
        if self.hours <= 0 or self.start_hour < 0:
            raise ValueError("hours: the slice needs start_hour >= 0 and hours > 0")
        if not self.time_scale > 0:
            raise ValueError("time_scale: must be > 0")
        if self.tenants < 1 or self.groups < 1:
            raise ValueError("tenants: tenants and groups must be at least 1")
        if self.max_jobs < 0:
            raise ValueError("max_jobs: must be >= 0 (0 keeps every job)")
        GENERATOR_PARAMETER["deadline_factor"].check(self.deadline_factor)  # a trace's deadlines too
        if self.kind() == "synthetic":
            self.synthetic().check()


@dataclass(frozen=True)
class ConfigSpec:
    """One market configuration: registry names (``scheduler.registry``) and parameters."""

    mechanism: str = "abacus"
    fairshare: str = "hltrf"
    dispatch: str = "stride"
    alpha: float = 0.5
    t_wait: float = 30.0
    seed: int = 0
    sample_interval: float = 60.0
    predictor: str = "exact"

    def params(self) -> MarketParams:
        """The runner's settings. Raises ValueError on an unknown ``predictor``."""
        return MarketParams(
            mechanism=self.mechanism, fairshare=self.fairshare, dispatch=self.dispatch, alpha=self.alpha,
            t_wait=self.t_wait, seed=self.seed, sample_interval=self.sample_interval,
            known_durations=predictor_knows(self.predictor),
        )


PREDICTORS = ("exact", "none")


def predictor_knows(name: str) -> bool:
    """The task-duration predictor the dispatcher plans with: "exact" tells it each task's
    duration at start (``Cluster.known_durations``: the look-ahead of ``simulator.cluster.lookahead``
    can place short tasks in gaps), "none" predicts nothing. Raises ValueError otherwise."""
    if name not in PREDICTORS:
        raise ValueError(f"predictor: {name!r} is not one of {', '.join(PREDICTORS)}")
    return name == "exact"

# Per-job record columns, in export order (PostgreSQL's jsonb keeps object keys in its own order).
JOB_COLUMNS = ("job_id", "tenant", "submit_s", "start_s", "finish_s", "response_s", "slowdown", "payment",
               "deadline_s", "deadline_met", "value", "utility")


def load_workload(spec: WorkloadSpec, limits: TraceLimits | None = None) -> list[TraceJob]:
    """The jobs of ``spec``: sliced, tenant-mapped and time-scaled; a SWIM or SWF file read
    within ``limits`` (lines and seconds; an upload's) when given.

    Raises:
        ValueError: bad spec, a malformed trace line (with file and line
            number), or an empty slice.
        FileNotFoundError: no such trace file.
    """
    spec.check()
    path = Path(spec.trace)
    if spec.kind() == "synthetic":
        jobs = list(generate(spec.synthetic()).jobs)  # a copy: the generator's result is cached
        return _nonempty(jobs[: spec.max_jobs] if spec.max_jobs else jobs)
    if spec.kind() == "jobs":
        jobs = _jobs_window(load_jobs_doc(path)[1], spec)
    elif spec.kind() == "swim":
        jobs = load_swim(path, rule=SwimRule(), start_hour=spec.start_hour, hours=spec.hours,
                         users=spec.tenants, groups=spec.groups, seed=spec.seed, limits=limits)  # fmt: skip
    else:
        jobs = []
        for job in load_swf(path, start_hour=spec.start_hour, hours=spec.hours, limits=limits):
            k = zlib.crc32(job.user.encode()) % spec.tenants
            jobs.append(TraceJob(job.job_id, job.submit_time, f"u{k}", f"g{k % spec.groups}", job.tasks, job.task_duration))
    if spec.max_jobs:
        jobs = jobs[: spec.max_jobs]
    if spec.time_scale != 1.0:
        jobs = [TraceJob(j.job_id, j.submit_time * spec.time_scale, j.user, j.group, j.tasks, j.task_duration) for j in jobs]
    return _nonempty(jobs)


def _nonempty(jobs: list[TraceJob]) -> list[TraceJob]:
    if not jobs:
        raise ValueError("hours: the slice holds no job (pick another start_hour or more hours)")
    return jobs


def job_terms(spec: WorkloadSpec, config: ConfigSpec, jobs: Sequence[TraceJob], m: int) -> dict[int, JobTerms]:
    """Each job's value, deadline and bid (``simulator.outcomes``): a generator's own terms,
    else its bid as the run draws it (``runner.draw_bid``) with a ``deadline_factor`` deadline."""
    if spec.kind() == "synthetic":
        terms = generate(spec.synthetic()).terms
        return {j.job_id: terms[j.job_id] for j in jobs}
    params = _bid_params(spec, config.params())
    bids = {j.job_id: draw_bid(j, params, m) for j in jobs}
    return trace_terms(jobs, {k: b.budget for k, b in bids.items()}, spec.deadline_factor,
                       {k: b.weights for k, b in bids.items()}, {k: b.utility for k, b in bids.items()})  # fmt: skip


def _slo(job: dict[str, Any]) -> float | None:
    """A jobs document's SLO (paper 000, Sec. 6: minimum utility), None when absent."""
    value = job.get("min_utility")
    return None if value is None else float(value)


def _bid_params(spec: WorkloadSpec, params: MarketParams) -> MarketParams:
    """``params`` with the workload's own bids: a live market's jobs keep theirs, a generator's its terms."""
    if spec.kind() == "jobs":
        doc, _ = load_jobs_doc(spec.trace)
        bids = {int(j["job_id"]): j for j in doc["jobs"]}
        return replace(params, budget=lambda j: float(bids[j.job_id]["budget"]), weights=lambda j: bids[j.job_id]["weights"],
                       utility=lambda j: str(bids[j.job_id]["utility"]), min_utility=lambda j: _slo(bids[j.job_id]))  # fmt: skip
    if spec.kind() == "synthetic":
        terms = generate(spec.synthetic()).terms
        return replace(params, budget=lambda j: terms[j.job_id].budget, weights=lambda j: terms[j.job_id].weights,
                       utility=lambda j: terms[j.job_id].utility)  # fmt: skip
    return params


JobsDoc = dict[str, Any]


def load_jobs_doc(path: str | Path) -> tuple[JobsDoc, list[TraceJob]]:
    """A live market's jobs exported by ``marketplace.lab.adapters.live_workload`` (JSON).

    The document: ``{"tree": {"names", "parent", "weight"}, "capacity": [...],
    "jobs": [{"job_id", "submit_time", "leaf", "tasks", "task_duration",
    "budget", "weights", "utility", "min_utility"}]}`` with ``leaf`` a leaf queue's path
    (``min_utility``, the SLO, may be absent or null)
    (the job's ``user``). Raises ValueError on a malformed document.
    """
    import json

    try:
        doc = json.loads(Path(path).read_text())
        jobs = [TraceJob(int(j["job_id"]), float(j["submit_time"]), str(j["leaf"]), "", tuple(int(t) for t in j["tasks"]),
                         tuple(float(d) for d in j["task_duration"])) for j in doc["jobs"]]  # fmt: skip
        QueueTree(names=tuple(doc["tree"]["names"]), parent=tuple(doc["tree"]["parent"]), weight=tuple(doc["tree"]["weight"]))
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"trace: {Path(path).name} is not a market jobs document ({exc})") from None
    return doc, sorted(jobs, key=lambda j: (j.submit_time, j.job_id))


def _jobs_window(jobs: list[TraceJob], spec: WorkloadSpec) -> list[TraceJob]:
    if not jobs:
        return []
    lo = jobs[0].submit_time + 3600.0 * spec.start_hour
    hi = lo + 3600.0 * spec.hours
    return [j for j in jobs if lo <= j.submit_time < hi]


def queue_tree(tenants: int, groups: int) -> tuple[QueueTree, dict[str, int]]:
    """``root.g<k mod groups>.u<k>`` for k < tenants, equal weights; user -> leaf position."""
    tree = QueueTree.from_paths({f"root.g{k % groups}.u{k}": 1.0 for k in range(tenants)})
    return tree, {name.rsplit(".", 1)[1]: pos for pos, name in enumerate(tree.leaf_names)}


def check_capacity(jobs: Sequence[TraceJob], capacity: Sequence[int]) -> None:
    """Raise ``ValueError("capacity: ...")`` unless there is one positive whole
    slot count per resource type of the jobs (SWIM: map, reduce; SWF: processors)."""
    m = len(jobs[0].tasks) if jobs else len(capacity)
    if len(capacity) != m:
        raise ValueError(f"capacity: the trace has {m} resource type(s); give {m} slot count(s), got {len(capacity)}")
    if any(int(c) != c or c <= 0 for c in capacity):
        raise ValueError("capacity: every slot count must be a whole number > 0")
    widest = max((t for j in jobs for t in j.tasks), default=0)
    if m == 1 and widest > capacity[0]:
        raise ValueError(f"capacity: a job needs {widest} processors at once; give at least that many")


def estimate_bytes(jobs: Sequence[TraceJob], capacity: Sequence[int], sample_interval: float) -> int:
    """Rough peak memory (bytes) of :func:`simulate` on ``jobs``: per job ~6 kB
    of engine state and records, per fairness sample ~1 kB per leaf-type, per
    clearing a price row. Used to refuse a run before it starts."""
    if not jobs:
        return 0
    span = max(j.submit_time for j in jobs) - min(j.submit_time for j in jobs)
    work = sum(n * d for j in jobs for n, d in zip(j.tasks, j.task_duration, strict=True)) / max(1, sum(capacity))
    samples = (span + work) / max(sample_interval, 1.0)
    leaves = len({j.user for j in jobs})
    need = 40e6 + 6_000 * len(jobs) + samples * 1_000 * leaves * len(capacity) + 2 * len(jobs) * 64 * len(capacity)
    return int(min(need, 2.0**62))  # huge (or infinite) work: a huge estimate, refused, never an OverflowError


def simulate(
    spec: WorkloadSpec, capacity: Sequence[int], config: ConfigSpec, observer: Observer | None = None
) -> tuple[list[TraceJob], RunResult]:
    """Load ``spec`` and replay it under ``config`` (``simulator.runner.run``).

    ``observer(now, events, submitted)`` is the runner's progress callback.

    Raises:
        ValueError, FileNotFoundError: see :func:`load_workload` and
            :func:`check_capacity`; ``UnknownName`` for a bad stage name.
    """
    jobs = load_workload(spec)
    check_capacity(jobs, capacity)
    tree, leaf = queue_tree(spec.tenant_count(), spec.groups)
    params = _bid_params(spec, config.params())
    if spec.kind() == "jobs":  # the live market's tree
        doc, _ = load_jobs_doc(spec.trace)
        tree = QueueTree(names=tuple(doc["tree"]["names"]), parent=tuple(doc["tree"]["parent"]), weight=tuple(doc["tree"]["weight"]))
        leaf = {name: pos for pos, name in enumerate(tree.leaf_names)}
    result = run(jobs, tree=tree, leaf_of_user=leaf, capacity=[int(c) for c in capacity], params=params, progress=observer)
    return jobs, result


def resource_names(spec: WorkloadSpec, m: int) -> list[str]:
    """Names of the run's ``m`` resource types, for tables and charts: SWIM traces, a live
    market's jobs and the map/reduce generators have map and reduce; SWF traces processors;
    ERA's job classes units."""
    if m == 2:
        return ["map", "reduce"]
    if m == 1:
        return ["units" if spec.kind() == "synthetic" and spec.generator == "era_classes" else "processors"]
    return [f"type {j}" for j in range(m)]


def leaf_names(spec: WorkloadSpec) -> list[str]:
    """The leaf queues of the run's tree, in leaf order (tenant names, or live queue paths)."""
    if spec.kind() == "jobs":
        doc, _ = load_jobs_doc(spec.trace)
        tree = QueueTree(names=tuple(doc["tree"]["names"]), parent=tuple(doc["tree"]["parent"]), weight=tuple(doc["tree"]["weight"]))
        return list(tree.leaf_names)
    return [name.rsplit(".", 1)[1] for name in queue_tree(spec.tenant_count(), spec.groups)[0].leaf_names]


def _r(value: float, digits: int = 6) -> float | None:
    return None if not math.isfinite(value) else round(float(value), digits)


def _rl(values: Any, digits: int = 6) -> list[float | None]:
    return [_r(float(v), digits) for v in np.asarray(values, dtype=np.float64).ravel()]


def minmax_downsample(
    x: NDArray[np.float64], y: NDArray[np.float64], points: int = MAX_SERIES_POINTS
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """At most ``2 * points`` samples keeping each bucket's min and max of
    ``y`` in time order (min/max per pixel column), so spikes survive."""
    n = len(x)
    if n <= 2 * points:
        return x, y
    edges = np.linspace(0, n, points + 1).astype(np.int64)
    keep: list[int] = []
    for lo, hi in itertools.pairwise(edges.tolist()):
        if hi <= lo:
            continue
        seg = y[lo:hi]
        a, b = lo + int(np.argmin(seg)), lo + int(np.argmax(seg))
        keep.extend(sorted({a, b}))
    idx = np.array(keep, dtype=np.int64)
    return x[idx], y[idx]


def _count_between(t: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64]) -> NDArray[np.float64]:
    """(len(t),) how many intervals ``[lo_k, hi_k)`` contain each time."""
    a = np.searchsorted(np.sort(lo), t, side="right")
    b = np.searchsorted(np.sort(hi), t, side="right")
    out: NDArray[np.float64] = (a - b).astype(np.float64)
    return out


def job_records(jobs: Sequence[TraceJob], result: RunResult, terms: Mapping[int, JobTerms], staged: bool = True) -> dict[str, list[Any]]:
    """Per-job records in columns (one entry per submitted job, trace order).

    ``slowdown = response / ideal`` with ``ideal`` the job's run time on an
    empty cluster (the sum of its stages' task durations when staged, their
    maximum otherwise; at least 1 s); ``payment`` sums the job's charges;
    ``deadline_s``, ``value`` are its terms (``job_terms``), ``deadline_met``
    and ``utility`` (realised, at its average shares) as ``simulator.outcomes``
    defines them. Unfinished jobs have ``None`` start/finish/response/slowdown/utility.
    """
    done = {f.job_id: f for f in result.finished}
    paid: dict[int, float] = {}
    for c in result.charges:
        paid[c.job_id] = paid.get(c.job_id, 0.0) + c.amount
    cols: dict[str, list[Any]] = {k: [] for k in JOB_COLUMNS}
    t0 = result.start_time
    met = deadline_met(jobs, result.finished, terms)
    utilities = realised_utility(jobs, {k: v.tolist() for k, v in result.average_shares.items()}, terms)
    for job, ok, u in zip(jobs, met, utilities, strict=True):
        stages = [d for n, d in zip(job.tasks, job.task_duration, strict=True) if n > 0]
        ideal = max(1.0, (sum(stages) if staged else max(stages, default=0.0)))
        f = done.get(job.job_id)
        cols["job_id"].append(job.job_id)
        cols["tenant"].append(job.user)
        cols["submit_s"].append(_r(job.submit_time - t0, 3))
        cols["start_s"].append(None if f is None else _r(f.start_time - t0, 3))
        cols["finish_s"].append(None if f is None else _r(f.finish_time - t0, 3))
        cols["response_s"].append(None if f is None else _r(f.response_time, 3))
        cols["slowdown"].append(None if f is None else _r(f.response_time / ideal, 4))
        cols["payment"].append(_r(paid.get(job.job_id, 0.0), 4))
        cols["deadline_s"].append(_r(terms[job.job_id].deadline - t0, 3))
        cols["deadline_met"].append(bool(ok))
        cols["value"].append(_r(terms[job.job_id].value, 4))
        cols["utility"].append(None if u is None else _r(u, 6))
    return cols


def welfare_metrics(jobs: Sequence[TraceJob], recs: Mapping[str, list[Any]], terms: Mapping[int, JobTerms]) -> dict[str, Any]:
    """``welfare`` (value of the jobs that met their deadline), ``welfare_share`` (of all
    requested value), ``deadline_met_fraction`` and ``realised_utility`` (summed; paper 000)
    from :func:`job_records`' columns (``simulator.outcomes``)."""
    w = welfare(jobs, recs["deadline_met"], terms)
    return {"welfare": _r(w.welfare, 4), "welfare_share": _r(w.share, 6), "deadline_met_fraction": _r(w.met_fraction, 6),
            "realised_utility": _r(utility_total(recs["utility"]), 6)}  # fmt: skip


def compact_result(jobs: Sequence[TraceJob], result: RunResult, tenants: Sequence[str], terms: Mapping[int, JobTerms]) -> dict[str, Any]:
    """The stored form of a run (JSON; simulated seconds since the first arrival).

    Keys: ``metrics`` (headline scalars, the one set every lab run is scored by:
    job completion time, slowdown, finish-time fairness ``rho_*``
    (``simulator.scorecard``), sharing benefit and loss, utilisation, welfare,
    revenue), ``series`` (on the fairness-sample
    grid, at most ``2 * MAX_SERIES_POINTS`` points: ``t``, ``utilisation``
    per type, ``running_jobs``, ``queued_jobs`` (arrived, no task started),
    ``pending_tasks``, ``rho`` per tenant (fairness degree, mean over the
    types it used, paper 002 Eq. 3), ``loss``/``benefit`` summed over types
    (Eqs. 4-5), ``revenue`` cumulative money charged), ``prices`` (clearing
    times and per-type prices, min/max-downsampled) and ``jobs``
    (:func:`job_records`). ``terms``: each job's value and deadline (:func:`job_terms`).
    """
    t0 = result.start_time
    samples = result.samples or [result.final]
    step = max(1, math.ceil(len(samples) / (2 * MAX_SERIES_POINTS)))
    picked = samples[::step]
    t = np.array([s.time for s in picked], dtype=np.float64)
    recs = job_records(jobs, result, terms)
    fin = {f.job_id: f for f in result.finished}
    start = np.array([fin[j].start_time if j in fin else math.inf for j in recs["job_id"]], dtype=np.float64)
    finish = np.array([fin[j].finish_time if j in fin else math.inf for j in recs["job_id"]], dtype=np.float64)
    submit = np.array([job.submit_time for job in jobs], dtype=np.float64)
    charge_t = np.array(sorted(c.time for c in result.charges), dtype=np.float64)
    charge_amounts = np.array([c.amount for c in sorted(result.charges, key=lambda c: c.time)], dtype=np.float64)
    cum = np.concatenate([[0.0], np.cumsum(charge_amounts)])
    revenue = cum[np.searchsorted(charge_t, t, side="right")]
    m = int(result.capacity.shape[0])
    rho = np.array([s.rho for s in picked], dtype=np.float64)  # (T, L, m)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a sample where no queue used a type: NaN, as meant
        rho_mean = np.nanmean(np.where(np.isfinite(rho) & (rho > 0), rho, np.nan), axis=2) if len(rho) else rho
    series = {
        "t": _rl(t - t0, 3),
        "utilisation": [_rl([s.utilisation[j] for s in picked], 4) for j in range(m)],
        "running_jobs": _rl(_count_between(t, start, finish), 0),
        "queued_jobs": _rl(_count_between(t, submit, np.minimum(start, finish)), 0),
        "pending_tasks": _rl([float(np.sum(s.demand) - np.sum(s.running)) for s in picked], 0),
        "rho": {name: _rl(rho_mean[:, k], 4) for k, name in enumerate(tenants)} if len(rho) else {},
        "loss": _rl([float(np.sum(s.loss)) for s in picked], 3),
        "benefit": _rl([float(np.sum(s.benefit)) for s in picked], 3),
        "revenue": _rl(revenue, 4),
    }
    ct = result.clearing_times - t0
    prices: dict[str, Any] = {"t": [], "price": []}
    for j in range(m):
        x, y = minmax_downsample(ct, result.prices[:, j]) if len(ct) else (ct, ct)
        prices["t"].append(_rl(x, 3))
        prices["price"].append(_rl(y, 6))
    summary = result.summary()
    resp = np.array([r for r in recs["response_s"] if r is not None], dtype=np.float64)
    slow = np.array([s for s in recs["slowdown"] if s is not None], dtype=np.float64)
    metrics = {
        "jobs": summary["jobs"],
        "finished": summary["finished"],
        "mean_response_s": _r(float(resp.mean())) if len(resp) else None,
        "p95_response_s": _r(float(np.percentile(resp, 95))) if len(resp) else None,
        "mean_slowdown": _r(float(slow.mean())) if len(slow) else None,
        "mean_utilisation": _rl(result.final.usage.sum(axis=0) / (result.capacity * max(result.end_time - t0, 1e-9))),
        "revenue": _r(float(charge_amounts.sum())),
        "mean_price": [_r(float(result.prices[:, j].mean())) if len(result.prices) else None for j in range(m)],
        "sharing_loss": _r(float(np.sum(result.final.loss))),
        "worst_sharing_loss": _r(min((float(np.sum(smp.loss)) for smp in samples), default=0.0)),
        "sharing_benefit": _r(float(np.sum(result.final.benefit))),
        "min_rho": _r(float(np.nanmin(rho_mean[-1]))) if len(rho) and np.isfinite(rho_mean[-1]).any() else None,
        "clearings": result.clearings,
        "makespan_s": _r(result.end_time - t0, 3),
        **welfare_metrics(jobs, recs, terms),
        **{k: None if v is None else _r(v) for k, v in rho_summary(
            list(finish_time_fairness(jobs, result.finished, result.capacity.tolist()).values())).items()},
    }
    return {"metrics": metrics, "series": series, "prices": prices, "jobs": recs, "tenants": list(tenants)}
