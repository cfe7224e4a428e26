"""Synthetic workloads of the papers' set-ups, replayed by the simulation lab like a trace (docs/mechanisms.md, "Workloads").

Each generator returns a :class:`Synthetic`: the jobs as :class:`~simulator.workloads.traces.TraceJob`
rows (what ``simulator.runner.run`` replays) and per job its :class:`JobTerms` (value,
deadline and bid), which the lab uses for the bids and for welfare and deadline-met
figures (``simulator.outcomes``). Everything is drawn from ``numpy.random.default_rng(seed)``,
so a seed gives the same workload on every machine. Parameters are checked before
anything is drawn (:class:`GeneratorSpec`); a bad one raises ``ValueError`` whose
message starts with the parameter's name.

* ``abacus_table1`` — paper 000, Sec. 7.1.2, Table 1: three users submit MapReduce
  jobs by independent Poisson processes (2, 1.5 and 1.1 jobs / min; task times
  30/20, 15/40, 60/10 s; budget $200; true utility linear, ``T_m x + T_r y``).
  The task counts (10 map, 10 reduce) and the +-20 % per-job task-time spread are
  ``simulator.workloads.table1``'s documented choices (the paper gives
  neither). The paper has no deadlines: a job's deadline is its submit time plus
  ``deadline_factor`` times its ideal time (its stages back to back, one wave each),
  so "deadline met" reads "slowdown <= deadline_factor". Value: the budget.
* ``era_classes`` — paper 001, Sec. 4: "6 classes of jobs" of equal count, the
  class with the largest jobs ("yahoo-5") worth $1 per unit-slot and the others
  $10, on a cluster "way too small to fit all jobs". The Yahoo class shapes are
  not published; ours (``ERA_CLASSES``): class c asks for W units, uniform on
  ``1 .. 2 W_c - 1`` (mean ``W_c``), for T slots of ``ERA_SLOT_S`` s, geometric
  on ``1, 2, ...`` (mean ``T_c``); the last class is the largest on average. Value
  ``V = unit * W * T * U(0.5, 1.5)`` and the window ``[A, A + slot_s * max(T + 1,
  ceil(T * U(1.5, era_slack))))`` follow ``simulator.era.workload``. Arrivals:
  Poisson, ``ERA_RATE_PER_MIN`` jobs / min. One resource type (units); a unit
  runs one task for T slots. Budget: the value.
* ``cura_mix`` — paper 004, Sec. IV-A: equal proportions of small, medium and
  large jobs (100 MB, 1 GB, 10 GB of input), Poisson arrivals (the paper's 11,500
  jobs in 100 minutes), customers uniform, each job one of 50 profiled jobs
  (``simulator.cura.workload.job_classes``: FB-2009 shapes), deadlines "uniformly
  distributed within the maximum deadline" beyond the job's ideal time (as
  ``simulator.cura.workload.generate`` offsets by ``t_min``). Tasks from the
  bytes by ``simulator.workloads.traces.SwimRule`` (map, reduce). Cura has no job values:
  each job is worth 1, so welfare counts the jobs that met their deadline
  (Fig. 6(a)'s success rate times the jobs). Budget 100 each.

``rate_scale`` multiplies every arrival rate; arrivals fall in ``[0, hours)``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.workloads.table1 import MAP_TASKS, REDUCE_TASKS, TABLE1, table1_jobs
from simulator.workloads.traces import SwimRule, TraceJob

GENERATORS = ("abacus_table1", "era_classes", "cura_mix")
ERA_CLASSES: tuple[tuple[float, float, float], ...] = (  # (mean units W_c, mean slots T_c, $ per unit-slot)
    (1.0, 2.0, 10.0), (2.0, 3.0, 10.0), (3.0, 4.0, 10.0), (4.0, 6.0, 10.0), (6.0, 8.0, 10.0), (10.0, 12.0, 1.0),
)
ERA_SLOT_S = 60.0
ERA_RATE_PER_MIN = 2.0
CURA_RATE_PER_S = 11_500 / 6000.0  # paper 004, Sec. IV-A: 11,500 jobs in 100 minutes
CURA_SIZES_B = (100e6, 1e9, 10e9)  # small, medium, large input bytes
CURA_CLASSES = 50
CURA_BUDGET = 100.0
FB2009 = Path(__file__).resolve().parents[2] / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"


@dataclass(frozen=True)
class GeneratorParameter:
    """A parameter the generators share with every workload spec, form and command that sets one.

    Attributes:
        name: the field's name (``GeneratorSpec``, ``simulator.whatif.run.WorkloadSpec``, the lab's
            parameters, ``manage.py simulate --<name>``).
        default: its value when not given.
        low: the smallest value allowed (excluded when ``strict``); every value is finite.
        help: what it does, one line.
        refusal: the ValueError's text after ``"<name>: "``.
    """

    name: str
    default: float
    low: float
    strict: bool
    help: str
    refusal: str

    def check(self, value: float) -> None:
        """Raise ValueError (the message starts with the name) unless ``low <(=) value < inf``."""
        if not ((self.low < value) if self.strict else (self.low <= value)) or not value < math.inf:
            raise ValueError(f"{self.name}: {self.refusal}")


# The one home of the generator parameters: their defaults, bounds and meaning.
GENERATOR_PARAMETERS = (
    GeneratorParameter("rate_scale", 1.0, 0.0, True, "multiplies a generator's arrival rates", "must be > 0"),
    GeneratorParameter("deadline_factor", 3.0, 1.0, False, "a trace or Table 1 job's deadline: submit + this many ideal run times",
                       "must be >= 1 (a deadline before the ideal finish cannot be met)"),
    GeneratorParameter("era_slack", 4.0, 1.5, False, "ERA jobs' largest window / duration factor (>= 1.5)",
                       "must be >= 1.5 (windows are T times U(1.5, era_slack))"),
    GeneratorParameter("cura_max_deadline_s", 200.0, 0.0, False,
                       "Cura jobs' largest deadline slack beyond their ideal time (simulated s)", "must be >= 0"),
)
GENERATOR_DEFAULTS: dict[str, float] = {p.name: p.default for p in GENERATOR_PARAMETERS}
GENERATOR_PARAMETER = {p.name: p for p in GENERATOR_PARAMETERS}


@dataclass(frozen=True)
class JobTerms:
    """What a synthetic job is worth and asks for.

    Attributes:
        value: V_j, money its completion by the deadline is worth (welfare, paper 001 Sec. 4).
        deadline: absolute simulated seconds (the jobs' submit clock).
        budget, weights, utility: its bid (paper 000, Sec. 3).
    """

    value: float
    deadline: float
    budget: float
    weights: tuple[float, ...]
    utility: str


@dataclass(frozen=True)
class Synthetic:
    """A generated workload: jobs in submit order, their terms by job id, and the users (tenants) drawn."""

    jobs: list[TraceJob]
    terms: dict[int, JobTerms]
    users: int


@dataclass(frozen=True)
class GeneratorSpec:
    """A generator and its parameters (module docstring).

    Attributes:
        name: one of ``GENERATORS``.
        hours: arrivals fall in ``[0, hours)`` simulated hours; > 0.
        rate_scale: multiplies the arrival rates; > 0.
        tenants: customers the ERA and Cura jobs are spread over uniformly (Table 1 has its 3 users).
        deadline_factor: Table 1's deadline, in ideal times; >= 1.
        era_slack: the largest window / duration factor of an ERA job; >= 1.5.
        cura_max_deadline_s: Cura's maximum deadline slack, simulated s; >= 0.
        seed: seeds every draw.
    """

    name: str
    hours: float = 0.5
    rate_scale: float = GENERATOR_DEFAULTS["rate_scale"]
    tenants: int = 8
    deadline_factor: float = GENERATOR_DEFAULTS["deadline_factor"]
    era_slack: float = GENERATOR_DEFAULTS["era_slack"]
    cura_max_deadline_s: float = GENERATOR_DEFAULTS["cura_max_deadline_s"]
    seed: int = 0

    def check(self) -> None:
        """Raise ValueError (the message starts with the parameter's name) on a bad value."""
        if self.name not in GENERATORS:
            raise ValueError(f"generator: {self.name!r} is not one of {', '.join(GENERATORS)}")
        if not (self.hours > 0 and math.isfinite(self.hours)):
            raise ValueError("hours: a synthetic workload needs hours > 0")
        GENERATOR_PARAMETER["rate_scale"].check(self.rate_scale)
        if self.tenants < 1:
            raise ValueError("tenants: must be at least 1")
        for name in ("deadline_factor", "era_slack", "cura_max_deadline_s"):
            GENERATOR_PARAMETER[name].check(getattr(self, name))


def ideal_s(job: TraceJob) -> float:
    """The job's run time with a slot for every task: its stages back to back, one wave each."""
    return float(sum(d for n, d in zip(job.tasks, job.task_duration, strict=True) if n > 0))


@functools.lru_cache(maxsize=8)
def generate(spec: GeneratorSpec) -> Synthetic:
    """The workload ``spec`` names (cached: a run asks for its jobs and their terms
    separately; callers must not mutate the result). Raises ValueError on a bad parameter."""
    spec.check()
    if spec.name == "abacus_table1":
        return abacus_table1(spec)
    if spec.name == "era_classes":
        return era_classes(spec)
    return cura_mix(spec)


def poisson_times(rng: np.random.Generator, rate_per_s: float, span_s: float) -> list[float]:
    """Arrival times of a Poisson process of ``rate_per_s`` on ``[0, span_s)`` (exponential gaps)."""
    out: list[float] = []
    t = float(rng.exponential(1.0 / rate_per_s))
    while t < span_s:
        out.append(t)
        t += float(rng.exponential(1.0 / rate_per_s))
    return out


def abacus_table1(spec: GeneratorSpec) -> Synthetic:
    """Paper 000, Table 1 (module docstring): users ``u0..u2``, in groups ``g0..``."""
    raw = table1_jobs(TABLE1, seed=spec.seed, minutes=spec.hours * 60.0, rate_scale=spec.rate_scale)
    jobs, terms = [], {}
    for j in raw:
        job = TraceJob(j.job_id, j.submit, f"u{j.user}", f"g{j.user}", (MAP_TASKS, REDUCE_TASKS),
                       tuple(float(d) for d in j.task_s))
        user = TABLE1[j.user]
        terms[j.job_id] = JobTerms(user.budget, j.submit + spec.deadline_factor * ideal_s(job), user.budget, user.true_weights, "linear")
        jobs.append(job)
    return Synthetic(jobs, terms, len(TABLE1))


def era_classes(spec: GeneratorSpec) -> Synthetic:
    """Paper 001, Sec. 4's six job classes (module docstring); one resource type."""
    rng = np.random.default_rng(spec.seed)
    times = poisson_times(rng, ERA_RATE_PER_MIN * spec.rate_scale / 60.0, spec.hours * 3600.0)
    jobs, terms = [], {}
    for k, t in enumerate(times):
        c = int(rng.integers(0, len(ERA_CLASSES)))
        mean_w, mean_t, unit = ERA_CLASSES[c]
        w = int(rng.integers(1, 2 * int(mean_w)))  # uniform on 1 .. 2 W_c - 1
        slots = int(rng.geometric(1.0 / mean_t))  # 1, 2, ... with mean T_c
        value = unit * w * slots * float(rng.uniform(0.5, 1.5))
        window = max(slots + 1, math.ceil(slots * float(rng.uniform(1.5, spec.era_slack))))
        user = int(rng.integers(0, spec.tenants))
        jobs.append(TraceJob(k, t, f"u{user}", f"c{c}", (w,), (slots * ERA_SLOT_S,)))
        terms[k] = JobTerms(value, t + window * ERA_SLOT_S, value, (1.0,), "log")
    return Synthetic(jobs, terms, spec.tenants)


def era_class_of(job: TraceJob) -> int:
    """The ERA class an ``era_classes`` job was drawn from (kept in its group name ``c<k>``)."""
    return int(job.group.removeprefix("c"))


def cura_mix(spec: GeneratorSpec, rule: SwimRule | None = None) -> Synthetic:
    """Paper 004, Sec. IV-A's small/medium/large mix (module docstring); map and reduce types."""
    from simulator.cura.workload import job_classes

    rule = rule or SwimRule()
    classes = job_classes(FB2009, n=CURA_CLASSES, seed=spec.seed)
    rng = np.random.default_rng([spec.seed, 4])
    times = poisson_times(rng, CURA_RATE_PER_S * spec.rate_scale, spec.hours * 3600.0)
    jobs, terms = [], {}
    for k, t in enumerate(times):
        cls = classes[int(rng.integers(0, len(classes)))]
        size = int(rng.integers(0, len(CURA_SIZES_B)))
        user = int(rng.integers(0, spec.tenants))
        slack = float(rng.uniform(0.0, spec.cura_max_deadline_s))
        b = CURA_SIZES_B[size]
        shuffle, output = cls.shuffle_ratio * b, cls.output_ratio * b
        job = TraceJob(k, t, f"u{user}", f"s{size}", rule.tasks_for(b, shuffle, output), rule.durations_for(b, shuffle, output))
        jobs.append(job)
        terms[k] = JobTerms(1.0, t + ideal_s(job) + slack, CURA_BUDGET, (1.0, 1.0), "log")
    return Synthetic(jobs, terms, spec.tenants)


def cura_size_of(job: TraceJob) -> int:
    """The size category (0 small, 1 medium, 2 large) a ``cura_mix`` job was drawn with (group ``s<k>``)."""
    return int(job.group.removeprefix("s"))
