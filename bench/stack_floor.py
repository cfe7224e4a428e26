"""The ceiling of the web stack itself: requests per second of trivial endpoints on this machine.

What the API load test (``bench/load.sh``) measures is the stack plus the API's views. This runs
the same stack -- gunicorn with ``docker/gunicorn.conf.py`` (gthread, 3 workers x 4 threads), the
project's settings and environment exactly as ``load.sh`` sets them (debug off, the same
throttle rates), PostgreSQL and Redis on this machine -- against endpoints that do next to
nothing (``bench/floor/urls.py``, selected by ``DJANGO_SETTINGS_MODULE=bench.floor.settings``,
which only swaps the URLconf), each through the whole middleware stack:

  plain    a Django view answering a small JsonResponse, no database
  row      the same plus one primary-key SELECT of the market row
  drfconst a DRF APIView under the project's REST_FRAMEWORK settings (``Authorization: Token``,
           IsAuthenticated, the three throttles on Redis, the orjson renderer) answering plain's body
  drf      the same view class reading the row and answering it through a ModelSerializer
  market   for comparison, the cheapest GET of the API mix: ``/api/market/`` (the market's state)

No market clock or Celery worker runs (nothing changes the market), so every answer is known in
advance: every response must be a 200 with the expected body, and each run must have served at
least ``--min-requests`` requests, or the script stops with exit status 3 (bench.figures).

The load is ``bench/load.py``'s: its ``Http`` client, ``--users`` users (50), each on one
keep-alive connection, thinking ``--think-min``..``--think-max`` s (0-0.05) between requests,
``--duration`` s per run. The think time caps the offered load at about users / (mean think +
latency): 50 / 0.025 s = 2,000 req/s at zero latency. Each configuration runs ``--rounds`` times,
alternating (forward order, then backward). Per run it prints the 1-minute load average and the
time of 10^7 pure-Python additions measured just before, then requests per second, p50/p95 latency,
and the CPU per request by process group (``bench/cpu_split.py``'s reading of /proc): gunicorn
(master and workers), the database's PostgreSQL backends, redis-server (shared with anyone else
using it) and the load generator (this process). On 2 cores the sum of those is the bound:
2,000 ms of CPU per second / (ms per request) = the most requests per second the stack can serve.

What it showed on a 2-core machine shared with other work (load average 9-12, so the stack got
about 1.2 of the 2 cores): the plain view served about 1,200-1,300 req/s at about 0.8 ms of server CPU
a request; the bare DRF view about 1.3 ms; one primary-key SELECT through the ORM adds about 0.9 ms;
the row through a ModelSerializer in the DRF view about 3.1 ms. So on two whole cores a Django view
tops out near 2,500 req/s, a DRF view near 1,500, and a DRF view that reads and serializes one row
near 650: an API request that touches the database costs more than the 1.67 ms that 1,200 req/s
on 2 cores allows.

The database is dropped and re-created (``--pg-url``; use your own name on a shared server),
migrated and seeded (``manage.py seed_demo``), and dropped again at the end unless ``--keep-db``.
Gunicorn is started in its own process group and stopped at the end, on Ctrl-C or SIGTERM too.

Usage: .venv/bin/python bench/stack_floor.py --pg-url postgres://postgres@127.0.0.1:5432/NAME
       [--redis-url redis://127.0.0.1:6379/N] [--endpoints plain row drfconst drf market] [--rounds 2]
       [--duration 25] [--users 50] [--think-min 0] [--think-max 0.05] [--workers 3] [--keep-db]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cpu_split import _groups  # noqa: E402
from bench.figures import python_additions_s, require  # noqa: E402
from bench.load import Http  # noqa: E402
from bench.scratch_db import database_url  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
ENDPOINTS = ("plain", "row", "drfconst", "drf", "market")


def stack_environment(args: argparse.Namespace, port: int) -> dict[str, str]:
    """The server's environment: ``bench/load.sh``'s, on this run's database, Redis and port."""
    env = dict(os.environ)
    env.update({
        "DJANGO_DEBUG": "0", "DJANGO_SECURE_SSL_REDIRECT": "0", "DJANGO_SECURE_COOKIES": "0", "DJANGO_SECURE_HSTS_SECONDS": "0",
        "DJANGO_SECRET_KEY": env.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(64),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost", "LOG_LEVEL": "ERROR", "MARKET_LOG_LEVEL": "ERROR",
        "THROTTLE_WRITES": env.get("THROTTLE_WRITES", "1200/min"), "THROTTLE_USER": env.get("THROTTLE_USER", "6000/min"),
        "DATABASE_URL": args.pg_url, "REDIS_URL": args.redis_url,
        "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": str(args.workers),
    })
    env.pop("GUNICORN_PROFILE_DIR", None)
    env.pop("GUNICORN_ACCESSLOG", None)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """Gunicorn in its own process group; :meth:`stop` ends the group (idempotent)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([GUNICORN, "marketplace.wsgi", "-c", "docker/gunicorn.conf.py"], cwd=ROOT,
                                     env={**env, "DJANGO_SETTINGS_MODULE": "bench.floor.settings"}, start_new_session=True)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the master stops its workers; the group catches strays
            self.proc.wait(timeout=25)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass


def wait_ready(base: str, server: Server) -> None:
    for _ in range(120):
        require(server.proc.poll() is None, "gunicorn started (it exited; see its log above)")
        try:
            with urllib.request.urlopen(f"{base}/floor/plain/", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    require(False, "gunicorn answered /floor/plain/ within 60 s")


def paths(pk: int) -> dict[str, str]:
    return {"plain": "/floor/plain/", "row": f"/floor/row/{pk}/", "drfconst": "/floor/drf/", "drf": f"/floor/drf/{pk}/",
            "market": "/api/market/"}


def check_body(name: str, data: bytes, want: dict[str, Any]) -> bool:
    """The answer is the endpoint's: equal to the floor's fixed body, or (the market's state) a JSON
    object with every key and value of ``want`` (its fields that do not move while no clock runs)."""
    try:
        got = json.loads(data)
    except ValueError:
        return False
    if name == "market":
        return isinstance(got, dict) and all(got.get(k) == v for k, v in want.items())
    return bool(got == want)


async def drive(base: str, path: str, name: str, want: dict[str, Any], tokens: list[str], duration: float,
                think: tuple[float, float], seed: int) -> tuple[list[float], list[str]]:
    """Latencies (ms) of every request, and the first few failures (anything but a 200 with ``want``)."""
    import random

    latencies: list[float] = []
    failures: list[str] = []
    stop_at = time.monotonic() + duration

    async def user(k: int, token: str) -> None:
        rng = random.Random(seed * 1000 + k)
        client = Http(base, {"Authorization": f"Token {token}", "Accept": "application/json"})
        try:
            while time.monotonic() < stop_at:
                t0 = time.perf_counter()
                try:
                    async with asyncio.timeout(30):
                        code, data = await client.request("GET", path)
                    ok = code == 200 and check_body(name, data, want)
                    detail = "" if ok else f"{code} {data[:160]!r}"
                except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
                    await client.close()
                    ok, detail = False, repr(exc)
                latencies.append((time.perf_counter() - t0) * 1000.0)
                if not ok:
                    failures.append(detail)
                await asyncio.sleep(rng.uniform(*think))
        finally:
            await client.close()

    await asyncio.gather(*(user(k, t) for k, t in enumerate(tokens)))
    return latencies, failures


def _stat_s(pid: int, first: int) -> float:
    """CPU seconds in /proc/PID/stat's fields ``first`` and ``first + 1`` (11: utime + stime, 13: the reaped children's)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[first]) + int(f[first + 1])) / os.sysconf("SC_CLK_TCK")


def cpu_now(web_pid: int, db: str) -> dict[str, dict[int, float]]:
    """CPU seconds per process of each group (``bench/cpu_split.py``'s), redis-server's, this process's, and
    the gunicorn master's reaped children's (a worker recycled after ``max_requests`` leaves its CPU there)."""
    groups = _groups({"web": web_pid}, db)
    groups["reaped"] = {web_pid: _stat_s(web_pid, 13)}
    redis: dict[int, float] = {}
    for d in Path("/proc").iterdir():  # redis-server: shared with whoever else uses it
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().startswith(b"redis-server"):
                    redis[int(d.name)] = _stat_s(int(d.name), 11)
            except OSError:
                continue
    groups["redis"] = redis
    groups["generator"] = {os.getpid(): time.process_time()}
    return groups


def cpu_used(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> tuple[dict[str, float], str]:
    """CPU seconds per group between two :func:`cpu_now`, and a note: "r" when a gunicorn worker was recycled
    (counted in full: the master's reaped children's time), "p" when a PostgreSQL backend of the database
    ended (its CPU is lost: the postgres figure is low)."""
    used = {name: sum(cpu - before.get(name, {}).get(pid, 0.0) for pid, cpu in pids.items()) for name, pids in after.items()}
    used["web"] = sum(after["web"].values()) - sum(before["web"].values()) + sum(after["reaped"].values()) - sum(before["reaped"].values())
    del used["reaped"]
    note = ("r" if set(before["web"]) != set(after["web"]) else "") + ("p" if set(before["postgres"]) - set(after["postgres"]) else "")
    return used, note


def one_run(args: argparse.Namespace, base: str, name: str, path: str, want: dict[str, Any], tokens: list[str],
            web_pid: int, db: str, seed: int) -> dict[str, Any]:
    additions = python_additions_s()
    load1 = float(Path("/proc/loadavg").read_text().split()[0])
    before = cpu_now(web_pid, db)
    t0 = time.monotonic()
    lat, failures = asyncio.run(drive(base, path, name, want, tokens, args.duration, (args.think_min, args.think_max), seed))
    wall = time.monotonic() - t0
    cpu, note = cpu_used(before, cpu_now(web_pid, db))
    require(not failures, f"every {name} response was a 200 with the expected body ({len(failures)} of {len(lat)} were not, "
                          f"e.g. {failures[:3]})")
    require(len(lat) >= args.min_requests, f"at least {args.min_requests} {name} requests in {args.duration:.0f} s (got {len(lat)})")
    lat.sort()
    n = len(lat)
    per = {k: 1000.0 * v / n for k, v in cpu.items()}
    return {"endpoint": name, "note": note, "load1": load1, "additions": additions, "n": n, "rps": n / wall, "p50": statistics.median(lat),
            "p95": lat[int(0.95 * (n - 1))], **{f"ms_{k}": v for k, v in per.items()}}


def print_table(rows: list[dict[str, Any]]) -> None:
    """Every run, then per endpoint its best run and the 2-core bound of its median run's server-side CPU."""
    print(f"\n{'endpoint':<8} {'load1':>5} {'add s':>5} {'requests':>8} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
          f"{'web':>5} {'pg':>5} {'redis':>5} {'gen':>5} {'total':>6} {'cores':>5}  note (CPU ms per request; cores = req/s x total)")
    for r in rows:
        total = r["ms_web"] + r["ms_postgres"] + r["ms_redis"] + r["ms_generator"]
        print(f"{r['endpoint']:<8} {r['load1']:>5.2f} {r['additions']:>5.2f} {r['n']:>8} {r['rps']:>7.0f} {r['p50']:>7.1f} "
              f"{r['p95']:>7.1f} {r['ms_web']:>5.2f} {r['ms_postgres']:>5.2f} {r['ms_redis']:>5.2f} {r['ms_generator']:>5.2f} "
              f"{total:>6.2f} {r['rps'] * total / 1000.0:>5.2f} {r['note']}")
    print("note r: a gunicorn worker was recycled during the run (its CPU counted); p: a PostgreSQL backend ended (pg low)")
    print("\nbest per endpoint (req/s), and 2,000 ms of CPU a second / the median run's server-side CPU ms per request\n"
          "(web + pg + redis, runs without p: the 2-core bound):")
    for name in dict.fromkeys(r["endpoint"] for r in rows):
        mine = [r for r in rows if r["endpoint"] == name]
        best = max(mine, key=lambda r: r["rps"])
        counted = [r for r in mine if "p" not in r["note"]] or mine
        stack = statistics.median(r["ms_web"] + r["ms_postgres"] + r["ms_redis"] for r in counted)
        print(f"  {name:<8} {best['rps']:7.0f} req/s (p95 {best['p95']:.1f} ms); server side {stack:.2f} ms CPU/request "
              f"-> at most {2000.0 / stack:,.0f} req/s with both cores to itself")


def setup_database(args: argparse.Namespace, env: dict[str, str]) -> tuple[int, dict[str, dict[str, Any]], list[str]]:
    """A fresh, migrated, seeded database; the market's primary key, each endpoint's expected answer, tokens."""
    database_url(True, args.pg_url)
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([PY, "manage.py", "seed_demo"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "DJANGO_DEBUG")})
    from bench.load import make_users

    tokens = [token for _, _, token in make_users(args.users)]  # sets Django up (marketplace.settings)
    from bench.floor.urls import expected
    from marketplace.market.models.market import Market

    market = Market.objects.order_by("id").first()
    require(market is not None, "seed_demo created a market")
    assert market is not None
    want = expected(market)
    want["market"] = {"market": market.name, "mechanism": market.mechanism}
    return market.pk, want, tokens


def drop_database(url: str) -> None:
    import psycopg
    from django.apps import apps

    if apps.ready:
        from django.db import connections

        connections.close_all()
    parsed = urlparse(url)
    with psycopg.connect(parsed._replace(scheme="postgresql", path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {parsed.path.lstrip('/')} WITH (FORCE)")


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/bench_floor"),
                   help="the scratch PostgreSQL database (dropped and re-created, dropped at the end)")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
                   help="Redis for the cache and throttles, as load.sh's REDIS_URL ('' : in-process cache)")
    p.add_argument("--endpoints", nargs="+", choices=ENDPOINTS, default=list(ENDPOINTS))
    p.add_argument("--rounds", type=int, default=2, help="runs of each endpoint, alternating (forward, backward, ...)")
    p.add_argument("--duration", type=float, default=25.0, help="seconds per run")
    p.add_argument("--users", type=int, default=50)
    p.add_argument("--think-min", type=float, default=0.0)
    p.add_argument("--think-max", type=float, default=0.05)
    p.add_argument("--workers", type=int, default=3, help="gunicorn workers (GUNICORN_WORKERS, as load.sh's default)")
    p.add_argument("--min-requests", type=int, default=1000, help="fewer requests in a run is a failed measurement")
    p.add_argument("--keep-db", action="store_true", help="do not drop the database at the end")
    args = p.parse_args()
    require(args.rounds >= 1 and 0 < args.duration <= 600 and args.users >= 1, "sane --rounds, --duration, --users")
    signal.signal(signal.SIGTERM, _terminate)
    db = urlparse(args.pg_url).path.lstrip("/")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = stack_environment(args, port)
    server: Server | None = None
    try:
        pk, want, tokens = setup_database(args, env)
        server = Server(env)
        wait_ready(base, server)
        urls = paths(pk)
        print(f"gunicorn pid {server.proc.pid} on {base}, {args.workers} workers x {env.get('GUNICORN_THREADS', '4')} threads; "
              f"{args.users} users, think {args.think_min}-{args.think_max} s, {args.duration:.0f} s a run; "
              f"database {db}, Redis {args.redis_url or '(none)'}")
        for name in args.endpoints:  # warm-up, not counted: imports, connections, the token cache
            asyncio.run(drive(base, urls[name], name, want[name], tokens, 3.0, (args.think_min, args.think_max), seed=0))
        rows = []
        for rnd in range(args.rounds):
            for name in args.endpoints if rnd % 2 == 0 else args.endpoints[::-1]:
                row = one_run(args, base, name, urls[name], want[name], tokens, server.proc.pid, db, seed=rnd + 1)
                rows.append(row)
                print(f"round {rnd + 1} {name:<7} load {row['load1']:.2f}, additions {row['additions']:.2f} s: "
                      f"{row['rps']:.0f} req/s, p95 {row['p95']:.1f} ms", flush=True)
        print_table(rows)
    finally:
        if server is not None:
            server.stop()
        if not args.keep_db:
            drop_database(args.pg_url)


if __name__ == "__main__":
    main()
