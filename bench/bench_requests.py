"""CPU cost per request of the load mix's endpoints, in process (no server, no network).

A figure that stays meaningful on a busy machine: for each request kind of
``bench/load.py``'s API mix (and, with ``--pages``, its page mix) it sends the requests
through Django's full stack (middleware, authentication, throttling, the view) with the
test ``Client`` and measures, per request:

* ``app ms``: this process's CPU time (``time.process_time``),
* ``db ms``:  the PostgreSQL backend's CPU time (from ``/proc/<backend pid>/stat``;
  PostgreSQL runs on this machine; blank on SQLite or when ``/proc`` is not readable),
* ``wall ms`` (median) and ``p10 wall`` (10th percentile: on a busy machine the closest
  to the request's own cost, since a sequential request waits only for itself and its
  queries when nothing else runs), and ``queries``.

The requests are drawn from the mix's weights, spread over ``--users`` load tenants
(``load-NN``, created as ``bench/load.py`` creates them). Between requests (not measured)
the market is cleared every ``--clear-every`` requests and the clock advances by
``--tick-s`` simulated seconds every ``--tick-every`` requests; the defaults (25 and 200,
60 s) are what ``make load`` sees at 200 req/s (about 8 clearings and one clock tick a
second), so caches keyed on the market's versions see realistic turnover and jobs finish. Production settings
(debug off) as ``bench/load.sh`` sets them.

Usage: DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/bench_requests.py
       [--requests 1500] [--users 50] [--clear-every 200] [--pages] [--profile out.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import random
import statistics
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-requests-" + "x" * 50)
os.environ.setdefault("DJANGO_SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("DJANGO_SECURE_COOKIES", "0")
os.environ.setdefault("DJANGO_SECURE_HSTS_SECONDS", "0")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,127.0.0.1")
os.environ.setdefault("LOG_LEVEL", "ERROR")
os.environ.setdefault("MARKET_LOG_LEVEL", "ERROR")

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _backend_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) of a PostgreSQL backend process, or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--requests", type=int, default=1500)
    p.add_argument("--users", type=int, default=50)
    p.add_argument("--clear-every", type=int, default=25)
    p.add_argument("--tick-every", type=int, default=200)
    p.add_argument("--tick-s", type=float, default=60.0)
    p.add_argument("--pages", action="store_true", help="the page mix instead of the API mix")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", action="append", help="measure only these request kinds (e.g. 'GET /api/jobs/')")
    p.add_argument("--profile", help="write a cProfile of the measured requests to this file")
    args = p.parse_args()

    import django

    django.setup()
    import load
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from marketplace.market.models.market import Market
    from marketplace.market.services.clearing import market_clear
    from marketplace.market.services.clock import cluster_advance

    users = load.make_users(args.users)
    market_id = Market.objects.order_by("id").values_list("id", flat=True).first()
    pid = None
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            pid = cur.fetchone()[0]
    mix = load.PAGE_MIX if args.pages else load.API_MIX
    kinds, weights = zip(*mix, strict=True)
    rng = random.Random(args.seed)
    clients = []
    for name, password, token in users:
        c = Client(HTTP_AUTHORIZATION=f"Token {token}") if not args.pages else Client()
        if args.pages:
            c.login(username=name, password=password)
        clients.append((c, []))

    def send(k: int, kind: str):  # type: ignore[no-untyped-def]
        c, mine = clients[k % len(clients)]
        if kind == "POST /api/jobs/":
            resp = c.post("/api/jobs/", load._bid_body(rng), content_type="application/json",
                          HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex)
            if resp.status_code == 201:
                mine.append(resp.json()["id"])
            return resp
        if kind == "POST cancel":
            if not mine:
                return None
            job = mine.pop(rng.randrange(len(mine)))
            return c.post(f"/api/jobs/{job}/cancel/", content_type="application/json", HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex)
        return c.get(load.PATHS.get(kind, kind.split(" ", 1)[1]))

    # Warm up: every kind once per client (imports, first queries, caches), then a clearing.
    for k in range(len(clients)):
        for kind in kinds:
            send(k, kind)
    market_clear(market_id=market_id)

    app: dict[str, list[float]] = defaultdict(list)
    db: dict[str, list[float]] = defaultdict(list)
    wall: dict[str, list[float]] = defaultdict(list)
    queries: dict[str, list[int]] = defaultdict(list)
    codes: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    prof = cProfile.Profile(time.process_time) if args.profile else None  # CPU time, not waiting
    for n in range(args.requests):
        if n and n % args.clear_every == 0:
            market_clear(market_id=market_id)
        if n and n % args.tick_every == 0:
            cluster_advance(market_id=market_id, seconds=args.tick_s)
        kind = rng.choices(kinds, weights)[0]
        k = rng.randrange(len(clients))
        if args.only and kind not in args.only and kind != "POST /api/jobs/":  # bids still arrive (they move the versions)
            continue
        d0, c0, w0 = _backend_cpu(pid), time.process_time(), time.perf_counter()
        if prof:
            prof.enable()
        with CaptureQueriesContext(connection) as ctx:
            resp = send(k, kind)
        if prof:
            prof.disable()
        c1, w1, d1 = time.process_time(), time.perf_counter(), _backend_cpu(pid)
        if resp is None:
            continue
        codes[kind][resp.status_code] += 1
        app[kind].append((c1 - c0) * 1000)
        wall[kind].append((w1 - w0) * 1000)
        queries[kind].append(len(ctx))
        if d0 is not None and d1 is not None:
            db[kind].append((d1 - d0) * 1000)
    if prof and args.profile:
        prof.dump_stats(args.profile)

    print(f"{args.requests} requests, {'page' if args.pages else 'API'} mix, {len(users)} users, clearing every "
          f"{args.clear_every}, tick of {args.tick_s:.0f} s every {args.tick_every}; per request: mean app CPU ms, "
          "mean db CPU ms, median wall ms, median queries")
    print(f"{'request':<28} {'count':>6} {'app ms':>8} {'db ms':>8} {'wall ms':>8} {'p10 wall':>8} {'queries':>8}  codes")
    tot_app = tot_db = 0.0
    total = 0
    for kind in kinds:
        if not app[kind]:
            continue
        n = len(app[kind])
        a = statistics.fmean(app[kind])
        d = statistics.fmean(db[kind]) if db[kind] else float("nan")
        tot_app += sum(app[kind])
        tot_db += sum(db[kind]) if db[kind] else 0.0
        total += n
        p10 = sorted(wall[kind])[len(wall[kind]) // 10]
        print(f"{kind:<28} {n:>6} {a:>8.2f} {d:>8.2f} {statistics.median(wall[kind]):>8.2f} {p10:>8.2f} "
              f"{statistics.median(queries[kind]):>8.0f}  {dict(codes[kind])}")
    print(f"{'mix (weighted mean)':<28} {total:>6} {tot_app / total:>8.2f} {tot_db / total:>8.2f}")
    per_req = (tot_app + tot_db) / total
    print(f"=> CPU per request {per_req:.2f} ms (app + db): at most {2000 / per_req:.0f} req/s on 2 cores "
          "(ignoring the load generator, gunicorn and the clearing)")


if __name__ == "__main__":
    main()
