"""Per-job fairness of a finished run: finish-time fairness rho for every job (docs/published_schedulers.md).

Every run of the lab, whatever its policy, is scored by one set of metrics
(``simulator.whatif.run.compact_result``, which calls this module): job
completion time (mean and p95), slowdown, finish-time fairness, sharing
benefit and loss (paper 002, Eqs. 4-5), utilisation, welfare (paper 001,
Sec. 4) and payments. This module holds the one that needs the whole run:

* :func:`mean_contention` -- N, the number of jobs in the system (submitted, not
  finished), averaged over each job's life;
* :func:`finish_time_fairness` -- Themis's ``rho = T_shared / T_ideal`` (Mahajan
  et al., NSDI'20, Sec. 3) per finished job: its response time over its run
  time on a dedicated ``1/N`` share of the cluster, N its mean contention;
* :func:`rho_summary` -- the largest rho, the share of jobs with rho > 1 (sharing
  made them slower than their own slice would have) and the mean.

Pure numpy over the run's records; no state.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from scheduler.published.themis import ideal_time
from simulator.records import JobFinished
from simulator.workloads.traces import TraceJob


def _ramp_integral(points: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``sum_k max(x - points_k, 0)`` for each x: the integral up to x of ``#(points <= t)``."""
    order = np.sort(points)
    prefix = np.concatenate([[0.0], np.cumsum(order)])
    count = np.searchsorted(order, x, side="right")
    out: NDArray[np.float64] = count * x - prefix[count]
    return out


def mean_contention(submit: NDArray[np.float64], finish: NDArray[np.float64], start: NDArray[np.float64],
                    end: NDArray[np.float64]) -> NDArray[np.float64]:  # fmt: skip
    """(n,) mean number of jobs in the system over ``[start_i, end_i]`` (``start_i`` when empty).

    A job is in the system from its ``submit`` to its ``finish`` (inf: never finished).
    """
    fin = np.where(np.isfinite(finish), finish, np.inf)

    def integral(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return _ramp_integral(submit, x) - _ramp_integral(fin[np.isfinite(fin)], x)
    span = end - start
    arrived = np.searchsorted(np.sort(submit), start, side="right")
    at_start = (arrived - np.searchsorted(np.sort(fin), start, side="right")).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (integral(end) - integral(start)) / span
    out: NDArray[np.float64] = np.maximum(np.where(span > 0, mean, at_start), 1.0)
    return out


def finish_time_fairness(jobs: Sequence[TraceJob], finished: Sequence[JobFinished], capacity: Sequence[float],
                         staged: bool = True) -> dict[int, float]:  # fmt: skip
    """Job id -> ``rho = response / T_ideal`` for every finished job (module docstring).

    ``T_ideal``: the job's tasks in waves on ``max(1, C_j / N)`` units of each type
    (stages back to back when ``staged``), N its mean contention; a job whose
    ideal time is 0 (no work) is left out.
    """
    done = {f.job_id: f for f in finished}
    submit = np.array([j.submit_time for j in jobs], dtype=np.float64)
    finish = np.array([done[j.job_id].finish_time if j.job_id in done else np.inf for j in jobs], dtype=np.float64)
    ran = np.isfinite(finish)
    n = mean_contention(submit, finish, submit[ran], finish[ran])
    cap = np.asarray(capacity, dtype=np.float64)
    out: dict[int, float] = {}
    for job, contention in zip([j for j, r in zip(jobs, ran, strict=True) if r], n.tolist(), strict=True):
        ideal = ideal_time(np.asarray(job.tasks), np.asarray(job.task_duration, dtype=np.float64), cap, contention, staged)
        if ideal > 0:
            out[job.job_id] = done[job.job_id].response_time / ideal
    return out


def rho_summary(rho: Sequence[float]) -> dict[str, float | None]:
    """``rho_max``, ``rho_above_1`` (fraction of jobs with rho > 1) and ``rho_mean``; None without jobs."""
    x = np.asarray(list(rho), dtype=np.float64)
    if x.size == 0:
        return {"rho_max": None, "rho_above_1": None, "rho_mean": None}
    return {"rho_max": float(x.max()), "rho_above_1": float(np.mean(x > 1.0 + 1e-9)), "rho_mean": float(x.mean())}
