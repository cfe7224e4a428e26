"""Benchmark: CPU time of one price preview (``bid_preview``) in a busy market.

The set-up of ``bench/bench_tick.py``: the demo hierarchy (two organisations 2:1, four leaf
queues), 40 map + 20 reduce slots, ``--active`` bids (map tasks U{1..49} x 10 s, reduce
tasks U{1..9} x 20 s, budgets U[50, 200]), one clearing and ``--warmup`` ticks of 30
simulated seconds. Then ``--repeat`` times each: the preview of a large bid (``--map`` map
tasks x 10 s + ``--reduce`` reduce tasks x 20 s, budget 2,000) and of a small one (10 map x
10 s + 2 reduce x 20 s, budget 40), timed. A preview clears the market with the bid added
at about 8-10 budgets and, for each, runs a copy of the engine until the bid would depart
(``simulator.market.preview.price_preview``; paper 000, Sec. 4: the auction clears on
every arrival and departure).

What it proves it timed (``bench.figures.require``): each preview returned one point per
budget tried, with the entered budget among them, a positive share and a finish time for
every point; the points of every repeat are the same (a hash of their bytes is printed:
equal hashes across code versions mean equal results).

Usage: .venv/bin/python bench/bench_preview.py [--active 300] [--repeat 5] [--postgres [--pg-url URL]]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import scratch_db  # noqa: E402
from bench.bench_tick import demo_market, place_bids  # noqa: E402
from bench.figures import python_additions_s, record, require, run_guarded  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--active", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--map", type=int, default=900, help="map tasks of the large bid (10 s each)")
    parser.add_argument("--reduce", type=int, default=100, help="reduce tasks of the large bid (20 s each)")
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of the large bid's previews here")
    scratch_db.add_arguments(parser)
    args = parser.parse_args()
    db = scratch_db.django_on_scratch(args)
    run(args, db)
    return 0


def digest(preview: object) -> str:
    """A hash of every point's budget, shares, sub-budgets, finish time, converged and in_pool (exact bytes)."""
    import numpy as np

    h = hashlib.sha256()
    for p in preview.points:  # type: ignore[attr-defined]
        h.update(np.float64(p.budget).tobytes() + np.asarray(p.shares, dtype=np.float64).tobytes()
                 + np.asarray(p.sub_budgets, dtype=np.float64).tobytes()
                 + (b"none" if p.finish_s is None else np.float64(p.finish_s).tobytes()) + bytes([p.converged, p.in_pool]))
    return h.hexdigest()[:16]


def run(args: argparse.Namespace, db: str) -> None:
    import cProfile

    import numpy as np

    from marketplace.auction.selectors import bid_preview
    from marketplace.auction.services import WorkItem
    from marketplace.market.models.jobs import Job
    from marketplace.market.models.market import Market
    from marketplace.market.services.clearing import market_clear
    from marketplace.market.services.clock import cluster_advance

    rng = np.random.default_rng(0)
    market, tenants = demo_market(f"bench-preview-{args.active}")
    place_bids(tenants, rng, args.active)
    market_clear(market_id=market.pk)
    for _ in range(args.warmup):
        cluster_advance(market_id=market.pk, seconds=30.0)
    market = Market.objects.get(pk=market.pk)
    active = Job.objects.filter(market=market, status__in=Job.ACTIVE).count()
    require(active >= 0.9 * args.active, f"about {args.active} jobs active (found {active})")
    tenant = tenants[0]
    bids = {
        f"{args.map + args.reduce:,}-task": (2000.0, [WorkItem("map", args.map, 10.0, 1.0), WorkItem("reduce", args.reduce, 20.0, 1.0)]),
        "12-task": (40.0, [WorkItem("map", 10, 10.0, 2.0), WorkItem("reduce", 2, 20.0, 1.0)]),
    }
    profiler = cProfile.Profile() if args.profile else None
    additions = python_additions_s()
    for k, (label, (budget, work)) in enumerate(bids.items()):
        cpus, hashes, points = [], set(), 0
        for _ in range(args.repeat):
            c0 = time.process_time()
            if profiler and k == 0:
                profiler.enable()
            preview = bid_preview(tenant=tenant, budget=budget, work=work, utility="linear")
            if profiler and k == 0:
                profiler.disable()
            cpus.append((time.process_time() - c0) * 1000)
            budgets = [p.budget for p in preview.points]
            require(len(budgets) >= 8 and budget in budgets, f"a point per budget tried, the entered one among them ({budgets})")
            require(all(p.finish_s is not None and p.shares.max() > 0 for p in preview.points),
                    "every point has a share and a finish time")
            hashes.add(digest(preview))
            points = len(budgets)
        require(len(hashes) == 1, f"the same points at every repeat ({sorted(hashes)})")
        p50 = statistics.median(cpus)
        print(f"bid_preview of a {label} bid on {db}, {active} active jobs: {points} budgets, CPU p50 {p50:.1f} ms "
              f"(min {min(cpus):.1f}, max {max(cpus):.1f}), points hash {hashes.pop()}")
        record(f"bid preview CPU p50, {label} bid, {active} active jobs, {db}", p50, unit="ms", better="lower",
               extra={"additions_s": additions}, note=f"{points} budgets, 10^7 additions {additions:.2f} s")
    if profiler:
        profiler.dump_stats(str(args.profile))
    print(f"10^7 pure-Python additions: {additions:.2f} s")


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
