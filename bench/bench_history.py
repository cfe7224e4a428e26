"""Benchmark: a big installation's pages, lists and tick (PostgreSQL).

A market as ``make load`` runs it (the demo hierarchy, 40 map + 20 reduce slots) with
``--tenants`` tenants, whose history is filled in bulk: ``--jobs`` finished jobs (100,000)
with their work rows, ``--entries`` ledger entries (1,000,000) and a day of samples at a tick
every ``--sample-s`` simulated seconds (market, fairness and price samples, the clearings'
records, one spot settlement per finished job and resource type). The rows are shaped as the
services write them: each table's rows are copies of rows the real services wrote first (a
bid placed, cleared, run and settled; a staff credit and debit; a tick's samples), given new
ids, owners, amounts and times, and written with ``COPY``. The ledger's rows keep the running
balances (``available_after``, ``held_after``) and the accounts end at the balances the
entries sum to: a job's hold, charge and release, and staff credits and debits for the rest.
One tenant (the measured one) owns a quarter of the jobs and entries.

Then ``--active`` bids are placed through the service (the jobs the tick runs and the
why-waiting explanation reads) and ``--rounds`` rounds run: a clock tick of ``--tick-s``
simulated seconds (timed; the bids departed in it are replaced first, untimed), then every
page and API list below once, each timed through Django's full stack (the test client,
production settings). A tick moves the market's versions, so no answer is served from the
previous round's cache.

Measured (p95 wall ms, goal <= 100 ms): the jobs page and API (first and a far page), the
account page and API, the ledger API (first and a far page), the dashboard's data and the
market series API, the why-waiting explanation of a waiting job; and the tick (p95 wall ms,
no goal here: bench/bench_tick.py has the tick's). Each answer must be a 200 with rows (the
pages' tables, the lists' results, a series with points, a waiting job's explanation), and
each query of each page is run under ``EXPLAIN``: the scans of the big tables are listed, by
index or sequential. The requests are timed as a server serves them (the process settled after
start-up as a web worker is, ``marketplace.infra.collector.settle``: without it the collector's full
passes over the loaded app, 100-150 ms each, land inside requests and set the p95); their queries are counted
in an untimed first round (capturing them formats each statement's SQL, which would inflate the times).

Usage: .venv/bin/python bench/bench_history.py [--jobs 100000] [--entries 1000000] [--rounds 30] [--pg-url URL]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import scratch_db  # noqa: E402
from bench.figures import record, require, run_guarded  # noqa: E402

GOAL_MS = 100.0
BIG_TABLES = ("marketplace_job", "marketplace_jobwork", "marketplace_ledgerentry", "marketplace_marketsample",
              "marketplace_fairnesssample", "marketplace_pricesample", "marketplace_allocationsnapshot",
              "marketplace_spotsettlement")

scratch_db.as_deployed()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--sample-s", type=float, default=30.0, help="simulated seconds between the history's samples")
    parser.add_argument("--active", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--tick-s", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pg-url", default=scratch_db.PG_URL, help="the scratch PostgreSQL database (dropped and re-created)")
    args = parser.parse_args()
    args.postgres = True  # COPY, EXPLAIN and the installation's size: PostgreSQL only
    scratch_db.django_on_scratch(args)
    from django.urls import get_resolver

    from bench import history
    from marketplace.infra import collector

    get_resolver().url_patterns  # noqa: B018
    collector.settle()  # the pages are timed as a web worker serves them: start-up settled (marketplace.wsgi)

    t0 = time.perf_counter()
    world = history.installation(tenants=args.tenants, seed=args.seed)
    counts = history.fill(world, jobs=args.jobs, entries=args.entries, sample_s=args.sample_s, seed=args.seed)
    print(f"filled in {time.perf_counter() - t0:.0f} s: " + ", ".join(f"{n:,} {what}" for what, n in counts.items()))
    require(counts["finished jobs"] >= args.jobs and counts["ledger entries"] >= args.entries,
            f"the history holds {args.jobs:,} finished jobs and {args.entries:,} ledger entries ({counts})")
    history.place_active(world, count=args.active)
    measure(world, args)
    return 0


def measure(world: object, args: argparse.Namespace) -> None:
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench import history
    from marketplace.dashboard import figures
    from marketplace.market import hooks
    from marketplace.market.models.jobs import Job
    from marketplace.market.models.market import Market
    from marketplace.market.services.clock import cluster_advance

    targets = history.targets(world)
    walls: dict[str, list[float]] = {name: [] for name in targets}
    cpus: dict[str, list[float]] = {name: [] for name in targets}
    queries: dict[str, int] = {}
    ticks: list[float] = []
    after: list[float] = []  # the clock's after-tick work: the dashboard's figures (a worker's, Celery eager here)
    computed = 0
    departed = started = 0
    active_seen = []
    for round_ in range(args.rounds + 1):  # round 0 (a warm-up, untimed) counts each request's queries
        history.replace_departed(world, count=departed)
        active_seen.append(Job.objects.filter(market_id=world.market.pk, status__in=Job.ACTIVE).count())  # type: ignore[attr-defined]
        t0 = time.perf_counter()
        result = cluster_advance(market_id=world.market.pk, seconds=args.tick_s)  # type: ignore[attr-defined]
        ticks.append((time.perf_counter() - t0) * 1000)
        c0 = time.process_time()
        hooks.after_tick(world.market.pk)  # as the clock does once the tick committed; from round 1 the dashboard is watched
        after.append((time.process_time() - c0) * 1000)
        market = Market.objects.get(pk=world.market.pk)  # type: ignore[attr-defined]
        computed += isinstance(cache.get(f"dashboard-figures:{figures.figures_version(market)}"), str)
        departed, started = result.finished_jobs, started + result.started_tasks
        for name, (fetch, has_rows) in targets.items():
            if hasattr(fetch, "prepare"):
                fetch.prepare()  # what the request names (a job waiting now), found untimed
            if round_ == 0:
                with CaptureQueriesContext(connection) as ctx:
                    resp = fetch()
                queries[name] = len(ctx)
            else:  # timed as served: capturing the queries formats each one's SQL (Django's debug cursor), which no server does
                c0, w0 = time.process_time(), time.perf_counter()
                resp = fetch()
                walls[name].append((time.perf_counter() - w0) * 1000)
                cpus[name].append((time.process_time() - c0) * 1000)
            require(resp.status_code == 200, f"{name} answers 200 (got {resp.status_code}: {resp.content[:200]!r})")
            require(has_rows(resp), f"{name} returned rows")
    require(computed >= args.rounds, f"the after-tick work kept the newest dashboard figures in each timed round ({computed})")
    require(started > 0 and min(active_seen) >= args.active // 2,
            f"the ticks ran tasks ({started} started) with at least {args.active // 2} jobs active (fewest {min(active_seen)})")
    print(f"\n{'request':<34} {'p50 ms':>8} {'p95 ms':>8} {'CPU ms':>8} {'queries':>8}")
    for name in targets:
        print(f"{name:<34} {statistics.median(walls[name]):>8.1f} {_p95(walls[name]):>8.1f} "
              f"{statistics.median(cpus[name]):>8.1f} {queries[name]:>8}")
    print(f"{'tick (' + str(round(statistics.median(active_seen))) + ' active jobs)':<34} {statistics.median(ticks):>8.1f} "
          f"{_p95(ticks):>8.1f}")
    print(f"{'dashboard figures after a tick':<34} {'':>8} {'':>8} {statistics.median(after[1:]):>8.1f}  (CPU, a worker's)")
    explain(targets)
    print(f"10^7 pure-Python additions: {additions_s():.2f} s (the goals are for about 0.6 s)")
    for name in targets:
        record(f"{name}, big installation, p95", _p95(walls[name]), unit="ms", goal=GOAL_MS, better="lower",
               extra={"cpu_ms": statistics.median(cpus[name]), "queries": queries[name]})
    record(f"clock tick, big installation, {statistics.median(active_seen):.0f} active jobs, p95", _p95(ticks), unit="ms",
           better="lower")
    record("dashboard figures after a tick (worker CPU), big installation, median", statistics.median(after[1:]), unit="ms",
           better="lower")


def explain(targets: dict[str, tuple[object, object]]) -> None:
    """Each page's queries under EXPLAIN: the scans of the big tables, by index or sequential."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    print("\nEXPLAIN: scans of the big tables per request (index name, or SEQ for a sequential scan)")
    for name, (fetch, _) in targets.items():
        with CaptureQueriesContext(connection) as ctx:
            fetch()  # type: ignore[operator]
        scans: list[str] = []
        for q in ctx.captured_queries:
            sql = q["sql"]
            if not sql.lstrip().upper().startswith("SELECT"):
                continue
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
                plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            scans += [s for s in _scans(plan[0]["Plan"]) if s.split(" ", 1)[0] in BIG_TABLES]
        print(f"  {name:<34} {'; '.join(sorted(set(scans))) or '(no big table read)'}")


def _scans(node: dict) -> list[str]:
    out = []
    if "Relation Name" in node:
        kind = node["Node Type"]
        how = "SEQ" if kind == "Seq Scan" else node.get("Index Name", kind)
        out.append(f"{node['Relation Name']} {how}")
    for child in node.get("Plans", []):
        out += _scans(child)
    return out


def _p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.95 * len(xs)))]


def additions_s() -> float:
    """Wall seconds of 10^7 pure-Python additions: this machine's speed at the moment."""
    t0, total = time.perf_counter(), 0
    for i in range(10**7):
        total += i
    assert total == 10**7 * (10**7 - 1) // 2
    return time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
