"""Per-job outcomes of a lab run: deadlines met, welfare and realised utility.

* **Deadline met** (paper 001, Sec. 4, "late jobs"; paper 004, Sec. IV-B, Fig. 6(a)'s
  "success rate ... the fraction of jobs that successfully meet their deadlines"):
  a job met its deadline iff it finished at or before it. A job that never finished
  did not meet it.
* **Welfare** (paper 001, Sec. 4: "value of accepted and completed jobs,
  and as a fraction of all requested value"): the sum of the values ``V_j`` of the
  jobs that met their deadline; ``welfare_share`` divides it by the value of all
  submitted jobs.
* **Realised utility** (paper 000, Sec. 5, Def. 1 and Sec. 3): the sum over the
  finished jobs of ``u_j(x̄_j)``, the job's utility function (its bid's weights and
  kind) at its *average job resource* ``x̄_j``, its shares averaged over its life
  (``RunResult.average_shares``). Types the job had no task of count 0
  (``scheduler.abacus.utility.utility_of``'s ``demand``).

Jobs of a trace carry no deadline or value: :func:`trace_terms` gives them the
deadline ``submit + deadline_factor * ideal`` (ideal: its stages back to back, one
wave each) and their bid's budget as value (what the tenant would pay at most).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.abacus.utility import utility_of
from simulator.records import JobFinished
from simulator.workloads.synthetic import JobTerms, ideal_s
from simulator.workloads.traces import TraceJob


@dataclass(frozen=True)
class Welfare:
    """Run totals: welfare (money), requested value (money), jobs that met their deadline, jobs."""

    welfare: float
    requested: float
    met: int
    jobs: int

    @property
    def share(self) -> float:
        """welfare / requested value (0 when nothing was requested)."""
        return self.welfare / self.requested if self.requested > 0 else 0.0

    @property
    def met_fraction(self) -> float:
        """Fraction of the jobs that met their deadline (0 without jobs)."""
        return self.met / self.jobs if self.jobs else 0.0


def trace_terms(jobs: Sequence[TraceJob], budget: Mapping[int, float], deadline_factor: float,
                weights: Mapping[int, Sequence[float]], utility: Mapping[int, str]) -> dict[int, JobTerms]:
    """Terms of trace jobs (module docstring); ``budget``, ``weights``, ``utility`` by job id (their bids)."""
    return {
        j.job_id: JobTerms(float(budget[j.job_id]), j.submit_time + deadline_factor * ideal_s(j), float(budget[j.job_id]),
                           tuple(float(w) for w in weights[j.job_id]), utility[j.job_id])
        for j in jobs
    }  # fmt: skip


def deadline_met(jobs: Sequence[TraceJob], finished: Sequence[JobFinished], terms: Mapping[int, JobTerms]) -> list[bool]:
    """Per job (in ``jobs`` order): did it finish by its deadline?"""
    finish = {f.job_id: f.finish_time for f in finished}
    return [j.job_id in finish and finish[j.job_id] <= terms[j.job_id].deadline for j in jobs]


def welfare(jobs: Sequence[TraceJob], met: Sequence[bool], terms: Mapping[int, JobTerms]) -> Welfare:
    """Welfare of a run from its deadline flags (module docstring)."""
    values = [terms[j.job_id].value for j in jobs]
    return Welfare(float(sum(v for v, ok in zip(values, met, strict=True) if ok)), float(sum(values)), int(sum(met)), len(jobs))


def realised_utility(jobs: Sequence[TraceJob], average_shares: Mapping[int, Sequence[float]],
                     terms: Mapping[int, JobTerms]) -> list[float | None]:
    """Per job (``jobs`` order): ``u_j`` at its average shares, None if it did not finish
    (or has no average share); ``-inf`` stays (a log utility of a type it never got)."""
    out: list[float | None] = []
    for j in jobs:
        avg = average_shares.get(j.job_id)
        if avg is None:
            out.append(None)
            continue
        t = terms[j.job_id]
        demand = np.array([[n > 0 for n in j.tasks]])
        u = utility_of(np.array([avg], dtype=np.float64), np.array([t.weights], dtype=np.float64), [t.utility], demand=demand)
        out.append(float(u[0]))
    return out


def utility_total(utilities: Sequence[float | None]) -> float:
    """Sum of the finite realised utilities (paper 000's welfare of the finished jobs)."""
    return float(sum(u for u in utilities if u is not None and math.isfinite(u)))
