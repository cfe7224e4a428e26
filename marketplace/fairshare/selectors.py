"""Fair-share reads: why a job waits, and the ``sshare``-like table (paper 002, Sec. 4-5).

The live market's engine (``simulator.market.engine.MarketEngine``) is rebuilt from the
state last stored on the market row, read-only; the explanations come from
``simulator.cluster.waiting`` on its cluster. A job submitted since the last clock
tick is not in that state yet: its explanation says so.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from typing import Any

from marketplace.market import adapters
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.selectors import mean_task_duration
from marketplace.market.services.market import engine_context, engine_stored
from scheduler.fairshare.fairness import twait_guidance
from simulator.cluster.model import Cluster
from simulator.cluster.waiting import WaitReason, estimate_start, explain_wait, fairshare_rows


def live_cluster(*, market: Market) -> Cluster | None:
    """The cluster as of the last stored clock tick (a fresh copy), or None if the
    market has not ticked on its current queue tree and resource types yet."""
    engine = engine_stored(market=market, context=engine_context(market))
    return None if engine is None else engine.cluster


def _seconds(x: float) -> str:
    return "off" if x == math.inf else f"{x:.0f} s" if x >= 10 else f"{x:.1f} s"


OTHER_TENANT_JOB = "another tenant's job"


def _reason_text(r: WaitReason, names: dict[int, str], resource: str) -> list[str]:
    """Plain sentences for one resource type, most decisive first."""
    out = []
    if not r.eligible:
        out.append(f"Its {resource} tasks wait for the job's earlier stages to finish.")
    if r.jobs_ahead:
        out.append(f"{len(r.jobs_ahead)} older job(s) of its queue still have {resource} tasks pending: "
                   + ", ".join(names.get(j, OTHER_TENANT_JOB) for j in r.jobs_ahead) + ".")
    block = r.blocking
    if block is not None and r.policy in ("ltrf", "hltrf", "mlrf"):
        out.append(
            f"Queue {block.ahead} is ahead of {block.queue}: it has used {block.ahead_normalised:,.0f} resource-seconds "
            f"per unit of its weight against {block.normalised:,.0f} ({block.gap:,.0f} more), so the fair-share walk "
            "serves it first (paper 002, Sec. 5.2)."
        )
    if r.policy == "hltrf":
        if r.lowest and r.t_wait < math.inf:
            left = max(r.t_wait - r.waited, 0.0)
            out.append(f"Its queue has the lowest usage per weight and has waited {_seconds(r.waited)} of T_wait = "
                       f"{_seconds(r.t_wait)}: the starvation timeout gives it a unit in {_seconds(left)} at the latest.")
        elif r.lowest:
            out.append(f"Its queue has the lowest usage per weight and has waited {_seconds(r.waited)}, but T_wait is off, "
                       "so only the hierarchy decides (it can starve).")
        else:
            out.append(f"Its queue has waited {_seconds(r.waited)}; T_wait = {_seconds(r.t_wait)} applies only to the "
                       "demanding queue with the lowest usage per weight, which is another queue now.")
    if r.policy in ("static",) or (r.free > 0 and r.running >= r.share):
        out.append(f"Its queue holds {r.running} units against a share of {r.share:.1f}; "
                   f"{r.free} units are idle but its limit keeps them from it.")
    if not out:
        out.append(f"All {resource} units are busy; its queue gets the next free one.")
    return out


def job_waiting(*, job: Job) -> dict[str, Any] | None:
    """Why an active job with pending tasks waits, per resource type, and an estimated
    start; None for a job that is not waiting. Keys: ``known`` (the clock has seen
    the job), ``estimated_start`` (simulated s or None), ``resources`` (list of dicts:
    ``resource``, ``position``, ``jobs_ahead`` [{id, name, budget}; id, budget None and the
    name "another tenant's job" for other tenants' jobs], ``budget_ahead``,
    ``levels``, ``waited``, ``t_wait`` ("off" or s), ``lowest``, ``running``, ``share``,
    ``share_within_queue``, ``reasons`` [sentences])."""
    works = list(JobWork.objects.filter(job=job).select_related("resource_type"))
    if job.status not in Job.ACTIVE or not any(w.pending for w in works):
        return None
    cluster = live_cluster(market=job.market)
    if cluster is None or cluster.job(job.pk) is None:
        return {"known": False, "estimated_start": None, "resources": [],
                "message": "The market clock has not taken this job in yet; it is considered at the next tick."}
    types = adapters.resource_types(job.market)
    shares = _within_queue_shares(job)
    rows = []
    for j, rt in enumerate(types):
        if not any(w.resource_type_id == rt.pk and w.pending for w in works):
            continue
        r = explain_wait(cluster, job.pk, j)
        ahead = {row["id"]: row for row in Job.objects.filter(pk__in=r.jobs_ahead).values("id", "name", "budget", "tenant_id")}
        # Privacy (market.visibility): another tenant's job ahead is shown without its id,
        # name or budget; the sum of the budgets ahead is an aggregate and stays.
        mine = {pk for pk, row in ahead.items() if row["tenant_id"] == job.tenant_id}
        names = {pk: (row["name"] or f"#{pk}") if pk in mine else OTHER_TENANT_JOB for pk, row in ahead.items()}
        rows.append({
            "resource": rt.name, "position": r.position,
            "jobs_ahead": [{"id": pk if pk in mine else None, "name": names[pk],
                            "budget": float(ahead[pk]["budget"]) if pk in mine else None} for pk in r.jobs_ahead if pk in ahead],
            "budget_ahead": float(sum((row["budget"] for row in ahead.values()), Decimal(0))),
            "levels": [vars(lv) for lv in r.levels], "waited": r.waited,
            "t_wait": "off" if r.t_wait == math.inf else r.t_wait, "lowest": r.lowest, "running": r.running,
            "share": r.share, "share_within_queue": shares.get(rt.name), "free": r.free,
            "reasons": _reason_text(r, names, rt.name),
        })
    start = estimate_start(cluster, job.pk)
    return {"known": True, "estimated_start": start, "now": cluster.now, "starts_in": None if start is None else start - cluster.now,
            "resources": rows}


def _within_queue_shares(job: Job) -> dict[str, float]:
    from marketplace.market import selectors

    return selectors.current_shares(market=job.market, job_ids=[job.pk]).get(job.pk, {})


def fairshare_table(*, market: Market) -> dict[str, Any]:
    """The ``sshare``-like table per resource type: ``{"now": s, "policy", "t_wait",
    "history", "types": [{"resource", "capacity", "rows": [...]}]}`` with the rows of
    :func:`simulator.cluster.waiting.fairshare_rows`; ``types`` is empty before the first tick."""
    cluster = live_cluster(market=market)
    head = {"policy": market.fairshare_policy, "t_wait": "off" if market.t_wait == math.inf else market.t_wait,
            "history": market.fairshare_history, "history_length": market.fairshare_history_length}
    if cluster is None:
        return head | {"now": market.sim_time, "types": []}
    types = adapters.resource_types(market)
    return head | {"now": cluster.now, "types": [
        {"resource": rt.name, "capacity": rt.capacity, "rows": [_finite(r) for r in fairshare_rows(cluster, j)]}
        for j, rt in enumerate(types)
    ]}


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    """JSON has no infinity: an infinite fairness degree (usage without entitlement) becomes None."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


# --- T_wait explorer: the paper's starvation example with the T_wait being edited ---------------

EXAMPLE_TREE = {"G1": ["A", "B"], "G2": ["C", "D"]}
EXAMPLE_ARRIVALS = {0: {"A": 200, "B": 10, "C": 50, "D": 60}, 27: {"A": 20, "B": 60, "C": 40, "D": 80}}
EXAMPLE_UNITS, EXAMPLE_WAVE, EXAMPLE_HORIZON = 12, 27, 60
DEFAULT_T_TASK = 60.0  # the paper's example: tasks of one minute


def twait_explorer(*, t_wait: float, t_task: float | None) -> dict[str, Any]:
    """The starvation example (paper 002, Sec. 5.2.1) under H-LTRF with ``t_wait``
    (seconds, inf = off), next to the naive hierarchy and LTRF, with tasks of ``t_task``
    seconds (the market's mean task duration; one minute if unknown) as one slot.

    Returns ``{"t_task", "t_wait", "slots": [s], "series": {label: B's units per slot},
    "first_wait": {label: seconds B waits for its first unit after the second wave},
    "max_gap": {label: longest gap between B's units while it has pending tasks, s},
    "tasks_running": Eq. 7's T_task / T_wait, "text": [sentences]}``.
    Raises ValueError for a negative or NaN ``t_wait``."""
    from scheduler.fairshare.fairness import twait_guidance
    from scheduler.fairshare.unit_tasks import unit_task_schedule

    if math.isnan(t_wait) or t_wait < 0:
        raise ValueError("t_wait must be >= 0 or inf")
    slot = t_task if t_task and t_task > 0 else DEFAULT_T_TASK
    end = EXAMPLE_WAVE + EXAMPLE_HORIZON
    runs = {
        f"H-LTRF, T_wait = {_seconds(t_wait)}": t_wait / slot,
        "naive hierarchy (T_wait off)": math.inf,
        "LTRF (T_wait = 0)": 0.0,
    }
    series, first, gaps = {}, {}, {}
    for label, tw in runs.items():
        out = unit_task_schedule(EXAMPLE_UNITS, EXAMPLE_TREE, EXAMPLE_ARRIVALS, policy="hltrf", t_wait=tw, horizon=end)
        b = [row["B"] for row in out[EXAMPLE_WAVE:]]
        series[label] = b
        served = [k for k, x in enumerate(b) if x]
        first[label] = served[0] * slot if served else None
        pending, granted, longest = 60, 0, 0
        for a, c in itertools.pairwise(served):
            granted += b[a]
            if granted < pending:
                longest = max(longest, c - a - 1)
        gaps[label] = longest * slot
    n = twait_guidance(slot, t_wait)
    mine = next(iter(runs))
    text = [
        f"One slot here is one task of T_task = {slot:.0f} s ({'the mean of recent jobs' if t_task else 'no jobs yet: one minute'}).",
        "Eq. 7: a starved queue keeps about T_task / T_wait = "
        + ("all it needs running (T_wait = 0 is LTRF)" if n == math.inf else "no task running (the naive hierarchy)" if n == 0
           else f"{n:.1f} tasks running") + ".",
        f"With T_wait = {_seconds(t_wait)}, B waits {_fmt_wait(first[mine])} for its first unit after the new demands "
        f"(naive hierarchy: {_fmt_wait(first['naive hierarchy (T_wait off)'])}; LTRF: {_fmt_wait(first['LTRF (T_wait = 0)'])}).",
    ]
    return {"t_task": slot, "t_wait": "off" if t_wait == math.inf else t_wait,
            "slots": [k * slot for k in range(EXAMPLE_HORIZON)], "series": series, "first_wait": first, "max_gap": gaps,
            "tasks_running": None if n == math.inf else n, "text": text}


def _fmt_wait(x: float | None) -> str:
    return "more than the whole run" if x is None else "0 s" if x == 0 else _seconds(x)


T_WAIT_CANDIDATES = (0.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0)


def twait_guidance_rows(*, t_task: float | None, t_wait: float) -> list[dict[str, Any]]:
    """Paper 002, Eq. 7 for the current T_wait and a few alternatives: tasks a starved
    queue keeps running, N = T_task / T_wait. ``t_task`` from :func:`mean_task_duration`."""
    if t_task is None:
        return []
    rows = []
    for tw in sorted({*T_WAIT_CANDIDATES, t_wait}):
        n = twait_guidance(t_task, tw)
        if n == float("inf") or tw == float("inf"):
            text = "no limit (LTRF)" if n == float("inf") else "none (naive hierarchy)"
        else:
            text = f"{n:.0f}" if n >= 10 else f"{n:.1f}" if n >= 1 else f"{n:.2f}"
        rows.append({"t_wait": tw, "tasks": n, "text": text, "current": tw == t_wait})
    return rows


def twait_hint(*, market: Market) -> str:
    """One sentence of Eq. 7 guidance for the market's current T_wait (the admin's field help)."""
    t_task = mean_task_duration(market=market)
    current = [r for r in twait_guidance_rows(t_task=t_task, t_wait=market.t_wait) if r["current"]]
    if not current:
        return ("No jobs yet: with tasks of T_task seconds, a starved queue keeps about T_task / T_wait tasks running "
                "(paper 002, Eq. 7). T_wait = 0 gives LTRF; a very large T_wait gives the naive hierarchy (starvation).")
    return (f"With tasks of about {t_task:.0f} s (T_task), a starved queue keeps about T_task / T_wait = {current[0]['text']} "
            "tasks running. T_wait = 0 gives LTRF; a very large T_wait gives the naive hierarchy (starvation).")
