"""Replay a workload trace as tenants' bids, live or as fast as possible (--drain).

Each trace job becomes a bid (``auction.services.bid_submit``) at its submit time
on the market clock; the cluster clock (``market.services.clock.cluster_advance``)
runs between arrivals. Every arrival and departure is cleared: live, a bid
enqueues ``clear_market_task``; drained (``--drain``), the tick that follows the
bid clears it (``market.services.market.clearings_deferred``); a tick clears each
departure itself.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.management.progress import Progress, progress
from marketplace.market import adapters, hooks, selectors
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue
from marketplace.market.models.tenants import Tenant
from marketplace.market.prices import fair_share_deposit, price_level
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.config import market_configure
from marketplace.market.services.market import clearings_deferred
from marketplace.market.services.setup import tenant_create
from simulator.workloads.traces import TraceJob, job_class, load_swf, load_swim

MAX_TICKS = 10_000_000


class Command(BaseCommand):
    help = "Replay a SWIM (or SWF) trace as bids of K tenants; live at --speedup, or --drain as fast as possible."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("path")
        parser.add_argument("--format", choices=["swim", "swf"], default="swim")
        parser.add_argument("--start-hour", type=float, default=0.0)
        parser.add_argument("--hours", type=float, default=None)
        parser.add_argument("--tenants", type=int, default=4, help="K tenants receive the trace's jobs (created if missing).")
        parser.add_argument("--seed", type=int, default=0, help="Seeds user assignment, budgets and utility weights.")
        parser.add_argument(
            "--speedup", type=float, default=None, help="Simulated seconds per wall second (sets the market's clock speed)."
        )
        parser.add_argument(
            "--drain", action="store_true", help="Advance as fast as possible until every replayed job finished, then exit."
        )
        parser.add_argument("--tick", type=float, default=0.5, help="Wall seconds between live clock ticks.")
        parser.add_argument("--max-jobs", type=int, default=None)
        parser.add_argument(
            "--once", action="store_true",
            help="Replay only onto a market that holds no replayed job yet (a second `make run` does not replay again).",
        )
        parser.add_argument(
            "--budgets", choices=["priced", "paper"], default="priced",
            help="priced (default): a budget pays the market's price level for the job's work, times U[50, 200] / 125 "
                 "(the paper's spread around it); paper: U[50, 200] whatever the work (paper 000's set-up).",
        )

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        try:
            self._replay(opts)
        except KeyboardInterrupt:  # Ctrl-C: the jobs submitted so far stay on the market
            self.stdout.write("\nReplay stopped (Ctrl-C).")
            raise SystemExit(130) from None

    def _replay(self, opts: dict) -> None:
        market = Market.objects.order_by("id").first()
        if market is None:
            raise CommandError("No market: run `python manage.py seed_demo` first.")
        if opts["once"] and (done := selectors.replayed_jobs(market=market).count()):
            self.stdout.write(f"Market '{market.name}' holds a replay already ({done} jobs): not replaying again. "
                              "`make reset` empties the database to start the demo over.")
            return
        if opts["tenants"] < 1:
            raise CommandError("--tenants must be at least 1.")
        jobs = self._load(opts)
        if opts["speedup"] is not None:
            market_configure(market=market, reason="replay_trace --speedup", clock_speed=opts["speedup"])
            market.refresh_from_db()
        tenants = _tenants(market, opts["tenants"])
        level = price_level(market=market) if opts["budgets"] == "priced" else None
        bids = _bids(jobs, tenants, market, np.random.default_rng(opts["seed"]), level)
        offset = market.sim_time
        self.stdout.write(f"Replaying {len(bids)} jobs from {opts['path']} for {len(tenants)} tenants, from simulated t={offset:.0f}s")
        t0, clearings0 = time.perf_counter(), market.clearings
        replay = _drain if opts["drain"] else _live
        ids, rejected = replay(self, market, bids, offset, opts)
        self._summary(market, ids, rejected, offset, t0, clearings0)

    def _load(self, opts: dict) -> list[TraceJob]:
        path = Path(opts["path"])
        if not path.exists():
            raise CommandError(f"No such trace: {path}")
        kw = {"start_hour": opts["start_hour"], "hours": opts["hours"], "users": opts["tenants"], "seed": opts["seed"]}
        jobs = load_swim(path, **kw) if opts["format"] == "swim" else load_swf(path, start_hour=opts["start_hour"], hours=opts["hours"])
        return jobs[: opts["max_jobs"]] if opts["max_jobs"] else jobs

    def _summary(self, market: Market, ids: list[int], rejected: int, offset: float, t0: float, clearings0: int) -> None:
        market.refresh_from_db()
        wall = time.perf_counter() - t0
        done = Job.objects.filter(pk__in=ids, status=Job.Status.FINISHED)
        resp = [j.sim_finish_time - j.sim_submit_time for j in done]
        sim = market.sim_time - offset
        self.stdout.write(f"wall_s={wall:.1f} sim_s={sim:.0f} sim_per_wall={sim / max(wall, 1e-9):.1f} rejected={rejected}")
        self.stdout.write(
            f"replayed={len(ids)} finished={len(resp)} clearings={market.clearings - clearings0} "
            f"mean_response_s={(sum(resp) / len(resp)) if resp else 0.0:.1f}"
        )


def _tenants(market: Market, k: int) -> list[Tenant]:
    """K tenants of the market, creating `tenantN` ones spread over the leaf queues if too few exist."""
    tenants = list(Tenant.objects.filter(market=market).select_related("account").order_by("id"))
    leaves = [q for q in Queue.objects.filter(market=market).order_by("id") if not q.children.exists()]
    n = len(tenants)
    while len(tenants) < k:
        n += 1
        queue = leaves[len(tenants) % len(leaves)]
        tenants.append(tenant_create(  # a day of its fair share at the price level (market.prices.fair_share_deposit)
            market=market, username=f"tenant{n}", password=None, queue=queue, deposit=fair_share_deposit(market=market, queue_id=queue.pk),
        ))
    return tenants[:k]


PAPER_MEAN_BUDGET = 125.0  # the mean of U[50, 200]


def _bids(jobs: list[TraceJob], tenants: list[Tenant], market: Market, rng: np.random.Generator,
          level: float | None = None) -> list[tuple[TraceJob, Tenant, dict]]:
    """Give each trace job a tenant, a budget and weights U[0.5, 2] (paper 000's set-up).

    The budget is paper 000's draw u ~ U[50, 200]; with a price ``level`` (money per slot-second;
    docs/economy.md) it is scaled to the job's work: ``level x work x u / 125``, so a bid pays
    about the market's price for what it asks for, with the paper's four-fold spread around it
    (the same draws either way, so a seed gives the same jobs)."""
    types = adapters.resource_types(market)
    users = sorted({j.user for j in jobs})
    owner = {u: tenants[i % len(tenants)] for i, u in enumerate(users)}
    out = []
    for job in jobs:
        if len(job.tasks) > len(types):
            raise CommandError(f"The trace has {len(job.tasks)} resource types, the market {len(types)}.")
        weights = rng.uniform(0.5, 2.0, size=len(job.tasks))
        # A map-only job has no reduce work item at all (not one with zero tasks).
        work = [
            WorkItem(types[j].name, int(job.tasks[j]), float(job.task_duration[j]), float(weights[j]))
            for j in range(len(job.tasks))
            if job.tasks[j] > 0
        ]
        # Named "trace-N", not "trace job N": on the pages "#N" is always the market's job number.
        # The class is the job's shape and size (traces.job_class), so a tenant's repeats gather and get utility fits.
        u = float(rng.uniform(50, 200))
        slot_seconds = float(sum(it.tasks * it.task_duration for it in work))
        budget = u if level is None else max(level * slot_seconds * u / PAPER_MEAN_BUDGET, 0.01)
        bid = {"budget": Decimal(str(round(budget, 2))), "work": work, "name": f"trace-{job.job_id}",
               "external_id": str(job.job_id), "utility": "log" if owner[job.user].pk % 2 == 0 else "linear",
               "job_class": job_class(job)}
        out.append((job, owner[job.user], bid))
    return out


def _submit(bid: tuple[TraceJob, Tenant, dict]) -> int | None:
    _, tenant, kw = bid
    try:
        return bid_submit(tenant=tenant, **kw).pk
    except ValidationError:
        return None


def _advance_to(market_id: int, until: float, now: float | None = None) -> float:
    """Clear what the last bid changed, then advance to ``until``; return the simulated
    time reached. One tick does both (it clears pending changes first and each
    departure on the way), so under ``clearings_deferred`` a drained bid costs one
    transaction for the bid and one for the tick.

    Already there (another bid at the same instant): no tick, only a clearing, so that
    each bid is cleared before any slot is handed out, as the offline runner does
    (``market_clear`` returns at once when a clearing has seen the bid already).
    ``now``, the clock as the caller last saw it, saves reading it (only this process
    moves it).
    """
    if now is None:
        now = Market.objects.filter(pk=market_id).values_list("sim_time", flat=True).get()
    if now >= until:
        market_clear(market_id=market_id)
        return now
    return cluster_advance(market_id=market_id, until=until).sim_time


def _stream(cmd: Command) -> Any:
    """The command's raw output stream: the progress bar writes carriage returns, which
    Django's ``OutputWrapper`` would end with a newline each."""
    return getattr(cmd.stdout, "_out", cmd.stdout)


@contextlib.contextmanager
def _no_query_log() -> Iterator[None]:
    """Within the block, Django keeps no log of the statements run, whatever ``DEBUG`` says.

    A drain runs a few statements per event, hundreds of thousands of them, and no one reads
    them back; with ``DEBUG`` on (the default set-up) Django would keep the text of each, and
    on SQLite quote each parameter with one more query to write it (a tenth of the drain's
    time). Nothing else in a drain reads ``DEBUG``: it serves no request."""
    debug = settings.DEBUG
    settings.DEBUG = False
    try:
        yield
    finally:
        settings.DEBUG = debug


def _drain(cmd: Command, market: Market, bids: list, offset: float, opts: dict) -> tuple[list[int], int]:
    ids, rejected = [], 0
    now = None
    # each bid is cleared by the tick that follows it
    with _no_query_log(), clearings_deferred(), progress(len(bids), stream=_stream(cmd)) as bar:
        for k, bid in enumerate(bids, 1):
            now = _advance_to(market.pk, offset + bid[0].submit_time, now)
            job_id = _submit(bid)
            if job_id is None:
                rejected += 1
            else:
                ids.append(job_id)
            bar.update(k, sim_t=f"{now:.0f}s", rejected=rejected)
        for _ in range(MAX_TICKS):
            now = cluster_advance(market_id=market.pk, until=(now or 0.0) + 3600.0, stop_when_idle=True).sim_time
            bar.update(len(bids), sim_t=f"{now:.0f}s", rejected=rejected, draining="yes")
            if not Job.objects.filter(pk__in=ids, status__in=Job.ACTIVE).exists():
                break
    return ids, rejected


def _live(cmd: Command, market: Market, bids: list, offset: float, opts: dict) -> tuple[list[int], int]:
    with progress(len(bids), stream=_stream(cmd)) as bar:
        return _live_loop(bar, market, bids, offset, opts)


def _live_loop(bar: Progress, market: Market, bids: list, offset: float, opts: dict) -> tuple[list[int], int]:
    ids, rejected, nxt = [], 0, 0
    last = time.monotonic()
    while nxt < len(bids) or Job.objects.filter(pk__in=ids, status__in=Job.ACTIVE).exists():
        time.sleep(opts["tick"])
        now = time.monotonic()
        market.refresh_from_db()
        target = market.sim_time + market.clock_speed * (now - last)
        last = now
        while nxt < len(bids) and offset + bids[nxt][0].submit_time <= target:
            cluster_advance(market_id=market.pk, until=offset + bids[nxt][0].submit_time)
            job_id = _submit(bids[nxt])
            if job_id is None:
                rejected += 1
            else:
                ids.append(job_id)
            nxt += 1
        result = cluster_advance(market_id=market.pk, until=target)
        Market.objects.filter(pk=market.pk).update(clock_wall_at=timezone.now())  # the live clock ticked (the pages' header clock runs)
        hooks.after_tick(market.pk)  # as run_clock's ticks: the dashboard's figures for its viewers
        bar.update(nxt, sim_t=f"{result.sim_time:.0f}s", active_jobs=result.active_jobs, tasks_finished=result.finished_tasks)
    return ids, rejected
