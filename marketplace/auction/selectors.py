"""Reads of the auction (paper 000): jobs as table rows, and the tenant-facing extras of Secs. 5-6:
SLO status, utility fits, and the price preview (a dry run on a copy of the engine).

Selectors read; nothing here writes. The Plan is the latest stored clearing
(``market.adapters.latest_plan``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError

from marketplace.auction.models import AdoptedUtility, WorkItem
from marketplace.ledger.money import MONEY_QUANTUM
from marketplace.ledger.selectors import job_money
from marketplace.market import adapters, selectors
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.prices import price_level
from marketplace.market.services.market import engine_context, engine_stored
from marketplace.web import charts
from scheduler.abacus.fit import UtilityFit, fit_utility
from scheduler.abacus.utility import utility_of
from simulator.market.engine import MarketEngine
from simulator.market.preview import PreviewPoint, preview_budgets, price_preview
from simulator.market.records import Bid
from simulator.records import JobSpec


@dataclass(frozen=True)
class SloStatus:
    """A job's SLO as its tenant sees it (paper 000, Sec. 6).

    Attributes:
        min_utility: the SLO (utility units), or None.
        in_pool: True/False while the job is in the latest Plan (in the prolific
            pool, or left out and running on idle units only); None otherwise.
        predicted: utility of the job's shares in the latest Plan (what it
            reaches if that allocation holds), or None (not in the Plan, or -inf).
        achieved: utility of its average shares at completion, or None.
        met: whether the SLO was met at completion, or None (not finished / no SLO).
    """

    min_utility: float | None
    in_pool: bool | None
    predicted: float | None
    achieved: float | None
    met: bool | None

    @property
    def predicted_meets(self) -> bool | None:
        if self.min_utility is None or self.predicted is None:
            return None
        return self.predicted >= self.min_utility - 1e-9 * max(1.0, abs(self.min_utility))


def _weights(job_ids: list[int], type_ids: list[int]) -> dict[int, list[float]]:
    col = {t: k for k, t in enumerate(type_ids)}
    out = {j: [0.0] * len(type_ids) for j in job_ids}
    for job_id, rt, w in JobWork.objects.filter(job_id__in=job_ids).values_list("job_id", "resource_type_id", "weight"):
        if rt in col:
            out[job_id][col[rt]] = float(w)
    return out


def slo_status(*, market: Market, jobs: Iterable[Job]) -> dict[int, SloStatus]:
    """job id -> :class:`SloStatus` for ``jobs`` (one Plan read, one weights query)."""
    jobs = list(jobs)
    latest = adapters.latest_plan(market.pk)
    rows: dict[int, int] = {}
    outside: set[int] = set()
    if latest is not None:
        plan = latest[1]
        rows = {int(j): k for k, j in enumerate(plan.job_ids.tolist())}
        outside = set(plan.diagnostics.outside_pool)
    in_plan = [j.pk for j in jobs if j.pk in rows and j.status in Job.ACTIVE]
    types = [t.pk for t in adapters.resource_types(market)]
    weights = _weights(in_plan, types) if in_plan else {}
    out = {}
    for job in jobs:
        predicted = in_pool = None
        if job.pk in weights and latest is not None:
            share = latest[1].shares[rows[job.pk]]
            u = float(utility_of(np.array([share]), np.array([weights[job.pk]]), job.utility)[0])
            predicted = u if math.isfinite(u) else None
            in_pool = job.pk not in outside
        met = None
        if job.min_utility is not None and job.achieved_utility is not None:
            met = job.achieved_utility >= job.min_utility - 1e-9 * max(1.0, abs(job.min_utility))
        out[job.pk] = SloStatus(job.min_utility, in_pool, predicted, job.achieved_utility, met)
    return out


@dataclass(frozen=True)
class ClassFit:
    """A tenant's job class and its utility fit (paper 000, Sec. 5).

    Attributes:
        job_class: the class (jobs of one tenant with this class are repeats).
        utility: the kind fitted ("linear" or "log": the kind most of its jobs bid).
        types: resource type names, the column order of the arrays below.
        jobs: k, completed jobs with a measured response time and average shares.
        needed: m, the fewest jobs a fit needs.
        fit: the fit, or None while k < m.
        adopted: the tenant's adopted weights for the class (name -> w), or None.
        points: (average shares, measured utility 1/s) per job, for the chart.
    """

    job_class: str
    utility: str
    types: list[str]
    jobs: int
    needed: int
    fit: UtilityFit | None
    adopted: dict[str, float] | None
    points: list[tuple[list[float], float]]


def class_training_data(*, tenant: Tenant, job_class: str, types: list[str]) -> tuple[str, list[tuple[list[float], float]]]:
    """(utility kind, [(average shares in ``types`` order, 1 / response time)]) of the
    tenant's finished jobs of ``job_class`` (Sec. 5: inverse response time for batch jobs)."""
    rows = Job.objects.filter(tenant=tenant, job_class=job_class, status=Job.Status.FINISHED,
                              average_shares__isnull=False, sim_finish_time__isnull=False)
    points, kinds = [], []
    for job in rows.only("utility", "average_shares", "sim_submit_time", "sim_finish_time"):
        response = (job.sim_finish_time or 0.0) - job.sim_submit_time
        if response > 0:
            points.append(([float(job.average_shares.get(t, 0.0)) for t in types], 1.0 / response))
            kinds.append(job.utility)
    kind = max(set(kinds), key=kinds.count) if kinds else Job.Utility.LINEAR
    return kind, points


def utility_fits(*, tenant: Tenant) -> list[ClassFit]:
    """One :class:`ClassFit` per job class of the tenant with a finished job, newest class first."""
    types = [t.name for t in adapters.resource_types(tenant.market_id)]
    adopted = {a.job_class: a.weights for a in AdoptedUtility.objects.filter(tenant=tenant)}
    classes = (Job.objects.filter(tenant=tenant, status=Job.Status.FINISHED).exclude(job_class="")
               .values_list("job_class", flat=True).distinct())
    out = []
    for job_class in sorted(set(classes)):
        kind, points = class_training_data(tenant=tenant, job_class=job_class, types=types)
        fit = None
        if len(points) >= len(types) and points:
            fit = fit_utility([p[0] for p in points], [p[1] for p in points], kind)
        out.append(ClassFit(job_class, kind, types, len(points), len(types), fit, adopted.get(job_class), points))
    return out


PREVIEW_JOB_ID = 2**53  # the previewed bid's id on the copy: above any real primary key
PREVIEW_NOTE = (
    "An estimate: the market's own auction run on a copy of the market as it stands now, with your bid added. "
    "It assumes nobody else arrives, cancels or changes the settings, and that tasks take their declared time; "
    "every later bid or departure changes the shares and the finish time. Nothing is placed or held."
)


def engine_copy(*, market: Market) -> MarketEngine:
    """A private copy of the market's engine, synced with the active jobs and the newest
    Plan like a tick does (``market.services.clock._sync``), built from the stored state: reads only.
    Stepping or clearing it changes nothing stored and no other copy."""
    context = engine_context(market)
    config = adapters.market_config(market)
    stored = engine_stored(market=market, context=context)
    if stored is not None:
        engine = stored
        if engine.config != config:
            engine.configure(config)
    else:
        engine = MarketEngine.create([t.capacity for t in context.types], context.tree_map.tree, config, seed=market.pk,
                                     sample_interval=math.inf, now=market.sim_time)
    engine.set_capacity([t.capacity for t in context.types])
    active = set(Job.objects.filter(market=market, status__in=Job.ACTIVE).values_list("id", flat=True))
    for job_id in [j for j in engine.known_jobs() if j not in active]:
        engine.cancel(job_id)
    new = [pk for pk in active if not engine.knows(pk)]
    for spec, bid in adapters.job_specs(new, context.types, context.tree_map, engine.now):
        engine.submit(spec, bid)
    latest = adapters.latest_plan(market.pk)
    if latest is not None and latest[0] != engine.plan_id:
        engine.apply_plan(latest[1], plan_id=latest[0])
    return engine


@dataclass(frozen=True)
class Preview:
    """A price preview for a bid (``simulator.market.preview``), ready for a page or the API."""

    types: list[str]
    entered: float
    points: list[PreviewPoint]
    note: str = PREVIEW_NOTE
    suggested: float | None = None  # the budget that pays the market's price level for the work (money)
    price_level: float | None = None  # money per slot-second (market.prices.price_level)
    work: float = 0.0  # the bid's work, slot-seconds
    minimum: float = 0.0  # the least budget the reserve prices allow for the work (money)

    @property
    def at_entered(self) -> PreviewPoint:
        return next(p for p in self.points if p.budget == self.entered)

    @property
    def at_suggested(self) -> PreviewPoint | None:
        return next((p for p in self.points if p.budget == self.suggested), None)

    def paid_rate(self, budget: float) -> float | None:
        """What a job with this budget pays per slot-second of its work, money: an auction job pays its
        budget at completion for all its work (paper 000), so budget / work (None without work)."""
        return budget / self.work if self.work > 0 else None

    def refused(self, budget: float) -> bool:
        """Whether a bid of this budget would be refused: below the reserve prices' minimum for the work."""
        return budget < self.minimum

    @property
    def flat(self) -> bool:
        """Whether every budget tried (two or more) buys the same shares and finish time: within the bid's
        queue it gets what it can use at any of them (no rival bids for its resource types there), and
        across queues the fair-share policy, not the budget, divides the cluster (paper 002)."""
        outcomes = {(p.shares.tobytes(), p.finish_s) for p in self.points}
        return len(self.points) > 1 and len(outcomes) == 1

    def rows(self) -> list[dict[str, Any]]:
        return [{"budget": p.budget, "shares": dict(zip(self.types, p.shares.tolist(), strict=True)),
                 "sub_budgets": dict(zip(self.types, p.sub_budgets.tolist(), strict=True)),
                 "finish_s": p.finish_s, "converged": p.converged, "in_pool": p.in_pool,
                 "paid_rate": self.paid_rate(p.budget), "refused": self.refused(p.budget)} for p in self.points]


def bid_preview(*, tenant: Tenant, budget: float, work: list[WorkItem], utility: str,
                min_utility: float | None = None, queue_id: int | None = None) -> Preview:
    """Share per resource type and estimated finish time the bid would get now, at its
    budget, at 1/8 .. 8 times it and at the suggested budget (:func:`suggested_budget`: the
    market's price level times the bid's work, at least the reserve prices' minimum) (``simulator.market.preview.price_preview``);
    multiples below that minimum are left out (a bid there is refused), the entered budget never is (``Preview.refused``),
    and an entered budget below it comes with the minimum itself; writes nothing.

    Raises:
        ValidationError: field errors of the work (as ``bid_submit``) or the budget.
    """
    market = tenant.market
    context = engine_context(market)
    by_name = {t.name: t for t in context.types}
    unknown = sorted({w.resource_type for w in work} - set(by_name))
    if unknown:
        raise ValidationError({"work": f"Unknown resource type(s): {', '.join(unknown)}."})
    if not any(w.tasks > 0 for w in work):
        raise ValidationError({"work": "A bid needs at least one task."})
    items = {w.resource_type: w for w in work}
    engine = engine_copy(market=market)
    leaf = context.tree_map.leaf_position(queue_id or tenant.default_queue_id)
    spec = JobSpec(
        job_id=PREVIEW_JOB_ID, leaf=leaf, submit_time=engine.now,
        tasks=tuple(items[t.name].tasks if t.name in items else 0 for t in context.types),
        task_duration=tuple(items[t.name].task_duration if t.name in items else 1.0 for t in context.types),
    )
    bid = Bid(float(budget), tuple(items[t.name].weight if t.name in items else 0.0 for t in context.types), utility,
              min_utility)
    entered = float(budget)
    work_s = float(sum(n * d for n, d in zip(spec.tasks, spec.task_duration, strict=True)))
    level = price_level(market=market)
    minimum = reserve_minimum((t, items[t.name]) for t in context.types if t.name in items)
    suggested = max(suggested_budget(level=level, work=work_s), float(minimum))
    try:
        # budgets the reserve prices refuse are not tried, but for the entered one (its row says it would be refused);
        # a refused one is shown beside the least budget they allow, what the cheapest bid placed would buy
        tried = {b for b in preview_budgets(entered) if b >= float(minimum)} | {entered, suggested}
        if entered < float(minimum):
            tried.add(float(minimum))
        points = price_preview(engine, spec, bid, sorted(tried))
    except ValueError as exc:
        raise ValidationError({"budget": str(exc)}) from None
    return Preview([t.name for t in context.types], entered, points, suggested=suggested, price_level=level, work=work_s,
                   minimum=float(minimum))


def reserve_minimum(chosen: Iterable[tuple[ResourceType, WorkItem]]) -> Decimal:
    """The least budget the reserve prices allow for this work (docs/economy.md, "A price nobody moves
    alone"): the sum over its types of the type's reserve price (money per slot-second) times the
    tasks times the seconds per task, rounded up to the money quantum."""
    total = sum(float(rt.reserve_price) * it.tasks * it.task_duration for rt, it in chosen)
    return Decimal(repr(float(total))).quantize(MONEY_QUANTUM, rounding=ROUND_UP)


def suggested_budget(*, level: float, work: float) -> float:
    """A budget that pays the market's price level (money per slot-second) for ``work`` slot-seconds,
    rounded to whole cents, at least one cent: what auction jobs have been paying for that much work
    (docs/economy.md, "A demo economy that means something")."""
    return max(round(level * work, 2), 0.01)


def job_rows(jobs: list[Job], market: Market, types: list[ResourceType]) -> list[dict[str, Any]]:
    """Jobs as table rows: money from the ledger, current shares, progress per resource type."""
    ids = [j.pk for j in jobs]
    money = job_money(job_ids=ids)
    shares = selectors.current_shares(market=market, job_ids=ids)
    paths = selectors.queue_paths(market=market)
    rows = []
    for job in jobs:
        work = {w.resource_type_id: w for w in job.work.all()}
        held, charged = money.get(job.pk, (0, 0))
        row_shares = [shares.get(job.pk, {}).get(t.name) for t in types]
        progress = [(work[t.pk].done, work[t.pk].tasks) if t.pk in work else None for t in types]
        rows.append({
            "job": job, "queue": paths.get(job.queue_id, ""), "held": held, "charged": charged,
            "shares": row_shares, "progress": progress,
            "cells": [
                {"progress": p, "share": None if v is None or p is None else f"{v:.0%}"} for p, v in zip(progress, row_shares, strict=True)
            ],
            "submit": charts.format_hms(job.sim_submit_time), "start": charts.format_hms(job.sim_start_time),
            # A cancelled job never finished: its end is a cancellation, and it has no response time.
            "cancelled": job.status == Job.Status.CANCELLED,
            "finish": charts.format_hms(job.sim_finish_time),
            "response": charts.format_hms(job.response_time),
        })
    return rows
