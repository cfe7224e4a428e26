"""The live cluster clock: one market step on the stored engine, and what it reports.

The engine is ``simulator.market.engine.MarketEngine`` (the same code offline runs
use), kept serialised on the market row (``services.market``). One tick runs
in one transaction under the market row lock: load the engine, tell it about
new and cancelled jobs, capacities and parameters, apply the newest stored
Plan, step, and store progress, departures, the charges the Plan's payment
rules decided (through the ledger), and the samples. A departure is a market
change cleared inside the tick on the tick's own engine (the version rises and
the Plan is stored as that version's clearing), so a tick of any length
dispatches as the offline runner does; bids are cleared by the clearing task.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from marketplace.infra import collector, instances, rows
from marketplace.infra.batch import Batch
from marketplace.ledger.services import job_charge, jobs_held_amounts, jobs_settle, money
from marketplace.market import adapters, hooks
from marketplace.market.models.allocation import FairnessSample, MarketSample, ShareSample
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.services.clearing import plan_store
from marketplace.market.services.market import (
    ENGINE_FIELDS,
    EngineContext,
    SyncMarks,
    active_job_ids,
    engine_context,
    engine_forget,
    engine_load,
    engine_marks,
    engine_store,
)
from marketplace.market.services.rates import Served, rates_record
from scheduler.plan import empty_plan
from scheduler.registry import MECHANISMS
from simulator.market.engine import MarketEngine
from simulator.market.records import Charge, ShareTable, StepReport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TickResult:
    """Summary of one clock tick."""

    sim_time: float
    started_tasks: int
    finished_tasks: int
    finished_jobs: int
    active_jobs: int


def _sync(engine: MarketEngine, market: Market, context: EngineContext, marks: SyncMarks) -> None:
    """Tell the engine about bids and cancellations since the last tick, capacities and parameters."""
    _use_executor(engine, market)
    engine.set_capacity([t.capacity for t in context.types])
    config = adapters.market_config(market)
    if config != engine.config:
        engine.configure(config)
    if market.state_version == marks.state_version:
        return  # no bid or cancellation since this copy was synced
    active = active_job_ids(market_id=market.pk)
    gone = [job_id for job_id in engine.known_jobs() if job_id not in active]
    for job_id in gone:
        engine.cancel(job_id)  # its running tasks are killed now
    if gone:
        JobWork.objects.filter(job_id__in=gone).update(running=0)
    new = [pk for pk in active if not engine.knows(pk)]
    for spec, bid in adapters.job_specs(new, context.types, context.tree_map, engine.now):
        engine.submit(spec, bid)
    hooks.sync_engine(market, engine, context.types)  # what the parts hold (ERA: bookings)


def _use_executor(engine: MarketEngine, market: Market) -> None:
    """Who runs the tasks (``CLUSTER_EXECUTOR``: the model, or a real cluster that reports their ends).
    A market switched while tasks run under the other executor switches once they have ended."""
    try:
        engine.set_executor(settings.CLUSTER_EXECUTOR)
    except ValueError as exc:
        log.info("market %s: %s", market.pk, exc)


def _apply_latest_plan(engine: MarketEngine, market: Market, marks: SyncMarks) -> list[Charge]:
    if market.clearings == marks.clearings:
        return []  # no clearing since this copy applied the newest Plan
    latest = adapters.latest_plan(market.pk)
    if latest is None or latest[0] == engine.plan_id:
        return []
    return engine.apply_plan(latest[1], plan_id=latest[0])


def _apply_progress(report: StepReport, types: list[ResourceType], batch: Batch) -> None:
    """Task counts of the jobs that changed (one statement). A type without tasks of the job (all
    counts 0) has no work row: it is left out rather than sent to match nothing."""
    rows.update_rows(JobWork, ("pending", "running", "done"), ("job", "resource_type"), (
        (pending[j], running[j], done[j], job_id, t.pk)
        for job_id, (pending, running, done) in report.progress.items()
        for j, t in enumerate(types)
        if pending[j] or running[j] or done[j]
    ), batch=batch)  # fmt: skip


def _apply_money(report: StepReport, acceptance: Sequence[Charge], market_id: int, types: list[ResourceType],
                 utilisation: list[float], batch: Batch) -> int:
    """Charges decided by the Plan's payment rules; departures settle and release the rest, and
    those the auction's rules settled add to the realised rate (``services.rates``). The jobs'
    rows change in two statements added to ``batch``: the first start of the jobs that started
    and did not depart, and the departed jobs' whole row (first start, money, finish, average
    shares) -- one row is never in both (a batch must not touch a row twice); the fixed prices of
    jobs that did not depart are saved at once."""
    owed = {c.job_id: c for c in report.charges}
    ids = {c.job_id for c in acceptance} | set(report.settled)
    jobs = {j.pk: j for j in instances.get_many(Job, sorted(ids), only=("id", "status", "charged", "tenant_id", "sim_start_time"))}
    charged = []
    for c in acceptance:  # fixed prices, due when the Plan that carries them is applied
        job = jobs.get(c.job_id)
        if job is not None and job.status in Job.ACTIVE:
            job_charge(job=job, amount=money(c.amount), memo=f"fixed price of job {job.pk}")
            charged.append(job.pk)
    finished = {f.job_id: f for f in report.departures}
    now, done_rows, served, settlements = timezone.now(), [], [], []
    settling = [job_id for job_id in report.settled if job_id in jobs and jobs[job_id].status in Job.ACTIVE]
    held = jobs_held_amounts(job_ids=settling)  # after the fixed prices above: they reduced it
    work = adapters.bid_work(settling, types)
    for job_id in settling:  # (a job cancelled meanwhile is left out: its hold was released then)
        c = owed.get(job_id)
        memo = f"{c.kind.replace('_', ' ')} charge for job {job_id}" if c else ""
        settlements.append((jobs[job_id], money(c.amount) if c else money(0.0), memo, held[job_id]))
    jobs_settle(settlements=settlements, batch=batch)
    for job_id in settling:
        job, c = jobs[job_id], owed.get(job_id)
        done = finished[job_id]
        achieved = _finite(report.achieved_utility[job_id]) if job_id in report.achieved_utility else None
        # The first start recorded (shown while the job ran) stays: an engine restarted by a
        # structure change re-dispatches requeued tasks and reports a later "first" start.
        start = job.sim_start_time  # the start its row holds, or for a queued job the first start of this tick
        if job.status == Job.Status.QUEUED and job_id in report.first_starts:
            start = report.first_starts[job_id]
        if start is None:
            start = done.start_time
        used = work[job_id]
        shares = report.average_shares.get(job_id)
        average = None if shares is None else {t.name: float(a) for t, a in zip(types, shares.tolist(), strict=True)}
        done_rows.append((Job.Status.FINISHED, job.charged, start, done.finish_time, now, achieved, float(sum(used)), average, job_id))
        if report.settled_rules.get(job_id, "fixed") != "fixed":  # the auction's rule: a spot price paid
            served.append(Served(job_id, money(c.amount) if c else money(0.0), used, job.tenant_id))
    departed = {row[-1] for row in done_rows}
    # the fixed prices of jobs that go on (rare: reservations, bookings) at once: such a job may start in this tick too
    rows.update_rows(Job, ("charged",), ("id",), [(jobs[pk].charged, pk) for pk in dict.fromkeys(charged) if pk not in departed])
    rows.update_rows(Job, ("status", "sim_start_time"), ("id", "status"), (
        (Job.Status.RUNNING, start, job_id, Job.Status.QUEUED) for job_id, start in report.first_starts.items() if job_id not in departed
    ), batch=batch)  # fmt: skip
    rows.update_rows(Job, ("status", "charged", "sim_start_time", "sim_finish_time", "finished_at", "achieved_utility",
                           "slot_seconds", "average_shares"), ("id",), done_rows, batch=batch)  # fmt: skip
    if served:
        rates_record(market_id=market_id, sim_time=report.now, types=types, served=served, utilisation=utilisation, batch=batch)
    return len(done_rows)


def _finite(x: float) -> float | None:
    """rho is infinite for a leaf that used resources it was never entitled to; stored as null (JSON has no inf)."""
    return float(x) if math.isfinite(x) else None


def _sample_rows(market: Market, report: StepReport, context: EngineContext, active: int) -> tuple[list[tuple], list[tuple]]:
    """The fairness and market sample rows of one step (``active``: active jobs after it)."""
    fair, overall = [], []
    types, leaf_ids = context.types, context.tree_map.leaf_queue_ids
    for s in report.samples:
        for j, t in enumerate(types):
            overall.append((market.pk, s.time, t.pk, float(s.benefit[j]), float(s.loss[j]), float(s.utilisation[j]), active))
            for leaf, queue_id in enumerate(leaf_ids):
                fair.append((
                    market.pk, s.time, queue_id, t.pk, float(s.usage[leaf, j]), float(s.share[leaf, j]),
                    float(s.demand[leaf, j]), float(s.entitled[leaf, j]), _finite(s.rho[leaf, j]), float(s.running[leaf, j]),
                ))
    return fair, overall


_FAIRNESS_FIELDS = ("market", "sim_time", "queue", "resource_type", "usage", "share", "demand", "entitled", "rho", "running")
_MARKET_FIELDS = ("market", "sim_time", "resource_type", "benefit", "loss", "utilisation", "active_jobs")


def _share_rows(report: StepReport, shares: ShareTable) -> list[tuple]:
    """Share history of one step, downsampled: each job's shares at every fairness sample
    it was present for, and its last shares at its departure (``shares``: those in force
    during the step)."""
    finish = {f.job_id: f.finish_time for f in report.departures}
    ids = shares.ids
    at = {job_id: int(k[0]) for job_id in finish if (k := np.flatnonzero(ids == job_id)).size}
    out: list[tuple] = []
    if report.samples and ids.size:
        end = np.full(ids.shape, math.inf)
        for job_id, k in at.items():
            end[k] = finish[job_id]
        for s in report.samples:
            present = np.flatnonzero((shares.arrival <= s.time) & (s.time < end))
            out += zip(ids[present].tolist(), repeat(s.time), shares.shares[present].tolist())
    for job_id, t in finish.items():
        if job_id in at:
            out.append((job_id, t, shares.shares[at[job_id]].tolist()))
    return out


@dataclass
class _TickWrites:
    """What the steps of one tick write, gathered and written once when it ends.

    A tick with departures takes a step per departure (each followed by a clearing), and
    each step used to write its own rows: a dozen statements per step, all while the market
    row, which every bid waits for, was held. Gathered, a tick writes each table once:
    the last counts of each job (a later step's supersede an earlier's), the first start
    of each, the money in the order it was due (every fixed price before the departures'
    settlements: a job's fixed price falls due when a Plan admits it, before it can depart),
    the departed jobs' rows with their average shares, the samples and the share history. Nothing
    in the tick reads these rows back before it ends, so on PostgreSQL they go with the engine's
    store in the tick's last statement (``infra.batch.Batch``).
    """

    reports: list[StepReport] = field(default_factory=list)
    acceptance: list[Charge] = field(default_factory=list)
    fair: list[tuple] = field(default_factory=list)
    overall: list[tuple] = field(default_factory=list)
    shares: list[tuple] = field(default_factory=list)

    def add_step(self, market: Market, context: EngineContext, report: StepReport, shares: ShareTable, active: int) -> None:
        self.reports.append(report)
        fair, overall = _sample_rows(market, report, context, active)
        self.fair += fair
        self.overall += overall
        self.shares += _share_rows(report, shares)

    def write(self, market: Market, types: list[ResourceType], utilisation: list[float], batch: Batch) -> tuple[StepReport, int]:
        """Write everything gathered (the writes whose result nothing reads added to ``batch``); returns
        the tick's steps as one report, and the number of jobs that departed (settled, not cancelled
        meanwhile). ``utilisation``: (m,) busy share of each type's slots when the tick ends (the
        level of demand of its departures)."""
        merged = _merged(self.reports)
        _apply_progress(merged, types, batch)
        departed = _apply_money(merged, self.acceptance, market.pk, types, utilisation, batch)
        rows.insert_rows(FairnessSample, _FAIRNESS_FIELDS, self.fair, batch=batch)
        rows.insert_rows(MarketSample, _MARKET_FIELDS, self.overall, batch=batch)
        rows.insert_rows(ShareSample, ("job", "sim_time", "shares"), self.shares, batch=batch)
        return merged, departed


def _merged(reports: list[StepReport]) -> StepReport:
    """One report for a tick's steps (at least one), in order: the last counts and the first start of each job win."""
    progress: dict = {}
    first_starts: dict[int, float] = {}
    for r in reports:
        progress.update(r.progress)
        for job_id, start in r.first_starts.items():
            first_starts.setdefault(job_id, start)
    return StepReport(
        now=reports[-1].now, departures=[d for r in reports for d in r.departures], charges=[c for r in reports for c in r.charges],
        settled=[j for r in reports for j in r.settled], samples=[], progress=progress,
        started_tasks=sum(r.started_tasks for r in reports), finished_tasks=sum(r.finished_tasks for r in reports),
        first_starts=first_starts, achieved_utility={k: v for r in reports for k, v in r.achieved_utility.items()},
        average_shares={k: v for r in reports for k, v in r.average_shares.items()},
        settled_rules={k: v for r in reports for k, v in r.settled_rules.items()},
    )


def _clear_now(engine: MarketEngine, market: Market, context: EngineContext) -> list[Charge]:
    """Clear the market on the tick's own engine (after a departure, as the offline
    runner does, or for changes no clearing has seen yet), store the Plan as the
    clearing of ``market.state_version`` and put it in force. Returns the charges due
    at acceptance (fixed prices)."""
    t0 = time.perf_counter()
    if engine.cluster.active_jobs():
        snap = engine.snapshot()
        ts = time.perf_counter()
        plan = MECHANISMS.build(engine.config.mechanism).clear(snap)
        solve_ms = (time.perf_counter() - ts) * 1000.0
    else:
        plan, solve_ms = empty_plan(engine.m, engine.config.mechanism), 0.0
    plan = engine.with_bookings(plan)  # the stored Plan lists every admitted reservation (ERA)
    params = adapters.clearing_params(engine.config, engine.cluster.capacity.tolist())
    plan_id = plan_store(market=market, plan=plan, types=context.types, solve_ms=solve_ms, t0=t0, params=params)
    market.cleared_version = market.state_version
    market.clearings += 1
    return engine.apply_plan(plan, plan_id=plan_id)


def cluster_advance(
    *, market_id: int, until: float | None = None, seconds: float | None = None, stop_when_idle: bool = False
) -> TickResult:
    """Advance the live market to simulated time ``until`` (or by ``seconds``).

    Changes no clearing has seen yet are cleared first, and every departure on the
    way is a market change cleared inside the tick, on the tick's engine, before any freed slot is handed out (paper 000, Sec. 4: the
    auction re-runs on every arrival and departure): the version rises, the Plan is
    stored and applied, and the tick goes on. So a tick of any length dispatches as
    the offline runner does, and no clearing task is enqueued for a departure. With
    ``stop_when_idle`` the tick ends at a departure that leaves no active job (a
    drain's last tick ends where the work did).

    Raises:
        ValueError: ``until`` lies before the market's current simulated time.
    """
    hooks.before_tick(market_id)  # the parts' reads outside the lock (a real cluster's job states)
    with collector.paused(), transaction.atomic():  # no collector pass while the market row is held (infra.collector)
        market = instances.get_row(Market, market_id, exclude=("engine_state",), for_update=True)
        target = until if until is not None else market.sim_time + (seconds or 0.0)
        if target < market.sim_time:
            raise ValueError(f"cannot move the clock back from {market.sim_time} to {target}")
        context = engine_context(market)
        engine = engine_load(market=market, context=context)
        marks = engine_marks(market=market)
        fields = ["sim_time", *ENGINE_FIELDS]
        clearings_before = market.clearings
        writes = _TickWrites()
        try:
            _sync(engine, market, context, marks)
            hooks.engine_report(market, engine, context.types)  # what the outside reported (a real cluster's task ends)
            writes.acceptance += _apply_latest_plan(engine, market, marks)
            if market.cleared_version < market.state_version:
                # bids or cancellations no clearing has seen (deferred, or the clearing
                # worker is slow or down): never hand out slots by a stale Plan
                writes.acceptance += _clear_now(engine, market, context)
            while True:
                shares = engine.share_table()
                report = engine.step(target, stop_on_departure=True)
                active = len(engine.cluster.active_jobs())
                writes.add_step(market, context, report, shares, active)
                market.sim_time = report.now
                if not report.departures:
                    break
                market.state_version += 1  # a market change (services.market.market_changed), cleared here
                writes.acceptance += _clear_now(engine, market, context)  # fixed prices due when its Plan applies
                if report.now >= target or (stop_when_idle and not active):
                    break
            hooks.engine_stepped(market, engine, context.types)  # what the steps decided for the outside (Slurm's launches)
            busy, capacity = engine.cluster.busy(), engine.cluster.capacity.tolist()
            batch = Batch()  # the tick's writes that nothing reads back: its last statement (PostgreSQL)
            tick, departures = writes.write(market, context.types, [b / c if c else 0.0 for b, c in zip(busy, capacity, strict=True)],
                                            batch)
            if hooks.tick_work_due(market):
                batch.run()  # the parts' work reads the tick's rows
                hooks.run_tick_work(market)  # the parts' work on the same clock (Cura: the VM pools' jobs, paper 004)
            if market.clearings != clearings_before:  # this tick cleared (and may have moved the version)
                fields += ["state_version", "cleared_version", "clearings"]
            engine_store(market=market, context=context, engine=engine, marks=SyncMarks(market.state_version, market.clearings),
                         batch=batch)
            rows.update_rows(Market, fields, ("id",), [(*(getattr(market, f) for f in fields), market.pk)], batch=batch)
            batch.run()
        except BaseException:
            engine_forget(market_id=market_id)  # this process's copy holds the failed tick's changes
            raise
    return TickResult(market.sim_time, tick.started_tasks, tick.finished_tasks, departures, active)


def cluster_tick(*, market_id: int, max_wall_s: float = 5.0) -> TickResult:
    """The live clock: advance by clock_speed x wall seconds since the last tick.

    A pause (no tick for a while) is not replayed in one jump: at most
    ``max_wall_s`` wall seconds count per tick.
    """
    now = timezone.now()
    with transaction.atomic():
        market = Market.objects.select_for_update().only("clock_wall_at", "clock_speed").get(pk=market_id)
        last = market.clock_wall_at or now
        elapsed = min(max((now - last).total_seconds(), 0.0), max_wall_s)
        Market.objects.filter(pk=market_id).update(clock_wall_at=now)
        return cluster_advance(market_id=market_id, seconds=market.clock_speed * elapsed)
