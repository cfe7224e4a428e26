"""Memory: the resident set (RSS) of a 24 h offline replay, and of a web worker after 10,000 requests.

1. ``offline``: bench_simulator's 24 h of FB-2009 (100 map + 50 reduce slots, the auction on
   every event) replayed twice in one process, RSS sampled every 500 events. Reported: the
   RSS before, the peak of each replay, and after each replay's result is dropped. The
   criterion, chosen before measuring: the second replay peaks at most 5 % above the first
   and leaves at most 5 % more behind; a leak (per event or per job) would add about a
   replay's worth of growth again.
2. ``web``: gunicorn with one worker (four threads, the deployment's ``gthread``, debug off)
   on a scratch database with the demo market, the clock ticking (``run_clock``) and eager
   clearings; four API users send the ``make load`` API mix (reads, bids, cancellations)
   one request after another until 10,000 were answered. The worker's RSS is read every
   1,000 requests. The criterion: the last 5,000 requests add at most 5 % to the RSS the
   first 5,000 left.

What it proves it measured (``bench.figures.require``): both replays finished every job; the
web worker answered every request (no error, no 429) and was the same process throughout
(not recycled).

Usage: .venv/bin/python bench/bench_memory.py [--part offline web] [--requests 10000] [--postgres [--pg-url URL]]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import scratch_db  # noqa: E402
from bench.figures import record, require, run_guarded  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
GROWTH = 1.05  # the criterion of both parts (module docstring)


def rss_mb(pid: int | str = "self") -> float:
    """Resident set of process ``pid`` in MB (Linux /proc)."""
    with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def offline(hours: float) -> None:
    """Part 1 (module docstring)."""
    from bench.bench_simulator import TRACE, two_group_tree
    from simulator.runner import MarketParams, run
    from simulator.workloads.traces import SwimRule, load_swim

    jobs = load_swim(TRACE, rule=SwimRule(), hours=hours, users=8, groups=2, seed=0)
    tree, leaf = two_group_tree(8)
    before = rss_mb()
    peaks, after = [], []
    for _ in range(2):
        samples = [rss_mb()]

        def progress(now: float, events: int, submitted: int, samples: list[float] = samples) -> None:
            if events % 500 == 0:
                samples.append(rss_mb())

        result = run(jobs, tree=tree, leaf_of_user=leaf, capacity=[100, 50], params=MarketParams(seed=0), progress=progress)
        samples.append(rss_mb())
        s = result.summary()
        require(s["finished"] == s["jobs"] == len(jobs), f"the replay finished every job ({s['finished']} of {len(jobs)})")
        peaks.append(max(samples))
        del result
        gc.collect()
        after.append(rss_mb())
    print(f"offline FB-2009 {hours:g} h, twice in one process: RSS before {before:.0f} MB; peaks {peaks[0]:.0f} and "
          f"{peaks[1]:.0f} MB; after each (result dropped) {after[0]:.0f} and {after[1]:.0f} MB")
    record(f"RSS peak, offline FB-2009 {hours:g} h replay", peaks[0], unit="MB", better="lower")
    record(f"RSS, second {hours:g} h replay's peak / first's (no growth: <= {GROWTH})", peaks[1] / peaks[0], unit="x",
           goal=GROWTH, better="lower", note=f"left behind: {after[0]:.0f} then {after[1]:.0f} MB")


def web(args: argparse.Namespace) -> None:
    """Part 2 (module docstring)."""
    url = scratch_db.database_url(args.postgres, args.pg_url)
    env = dict(os.environ, DATABASE_URL=url, DJANGO_DEBUG="0", DJANGO_SECRET_KEY=uuid.uuid4().hex * 2, DJANGO_SECURE_SSL_REDIRECT="0",
               DJANGO_SECURE_COOKIES="0", DJANGO_SECURE_HSTS_SECONDS="0", DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
               LOG_LEVEL="ERROR", MARKET_LOG_LEVEL="ERROR", THROTTLE_USER="1000000/min", THROTTLE_WRITES="1000000/min",
               PYTHONPATH=str(ROOT), GUNICORN_BIND=f"127.0.0.1:{args.port}", GUNICORN_WORKERS="1", GUNICORN_THREADS="4")
    env.pop("REDIS_URL", None)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_DEBUG", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS")})
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([*manage, "seed_demo"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / "bench-memory-web.log", "w")  # noqa: SIM115 (closed with the processes)
    procs = [subprocess.Popen([sys.executable, "-m", "gunicorn", "marketplace.wsgi", "-c", "docker/gunicorn.conf.py"], cwd=ROOT, env=env,
                              stderr=log, start_new_session=True),
             subprocess.Popen([*manage, "run_clock"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, start_new_session=True)]
    try:
        worker = _worker_pid(procs[0].pid)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
        from bench.load import make_users

        users = make_users(4)
        marks = asyncio.run(_drive(f"http://127.0.0.1:{args.port}", users, args.requests, worker))
        require(_worker_pid(procs[0].pid) == worker, "the same worker answered every request (it was not recycled)")
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=30)
        log.close()
    half, last = marks[(len(marks) + 1) // 2 - 1], marks[-1]
    print("web worker RSS every 1,000 requests (MB): " + " ".join(f"{mb:.0f}" for _, mb in marks))
    record(f"RSS of a web worker after {args.requests:,} requests", last[1], unit="MB", better="lower")
    record(f"RSS of a web worker, after {last[0]:,} / after {half[0]:,} requests (no growth: <= {GROWTH})", last[1] / half[1],
           unit="x", goal=GROWTH, better="lower")


def _worker_pid(master: int, timeout: float = 60.0) -> int:
    """The pid of gunicorn's one worker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.2)
    raise RuntimeError("gunicorn started no worker")


async def _drive(base: str, users: list[tuple[str, str, str]], total: int, worker: int) -> list[tuple[int, float]]:
    """Send ``total`` requests of the API mix from the users, one at a time each; (requests, RSS MB) every 1,000."""
    from bench.load import API_MIX, PATHS, Http, _bid_body

    await _wait_until_up(base)
    sent, answered, marks, failures = 0, 0, [], []
    kinds, weights = zip(*API_MIX, strict=True)

    async def user(token: str, seed: int) -> None:
        nonlocal sent, answered
        rng = random.Random(seed)
        client = Http(base, {"Authorization": f"Token {token}", "Accept": "application/json"})
        mine: list[int] = []
        while sent < total:
            kind = rng.choices(kinds, weights)[0]
            if kind == "POST cancel" and not mine:
                continue  # nothing of its own to cancel (as bench/load.py)
            sent += 1
            if kind == "POST /api/jobs/":
                code, body = await client.request("POST", "/api/jobs/", json.dumps(_bid_body(rng)).encode(), "application/json",
                                                  {"Idempotency-Key": uuid.uuid4().hex})
                if code == 201:
                    mine.append(json.loads(body)["id"])
            elif kind == "POST cancel":
                code, body = await client.request("POST", f"/api/jobs/{mine.pop(rng.randrange(len(mine)))}/cancel/", b"", "",
                                                  {"Idempotency-Key": uuid.uuid4().hex})
                code = 200 if code == 409 else code  # the job finished meanwhile (a state conflict): not an error
            else:
                code, body = await client.request("GET", PATHS.get(kind, kind.split(" ", 1)[1]))
            if code >= 400:
                failures.append(f"{kind}: {code} {body[:120]!r}")
            answered += 1
            if answered % 1000 == 0:
                marks.append((answered, rss_mb(worker)))
        await client.close()

    await asyncio.gather(*(user(token, k) for k, (_, _, token) in enumerate(users)))
    require(not failures, f"every request answered without error ({len(failures)} failed, first: {failures[:2]})")
    require(len(marks) >= 2, f"RSS read at least twice ({len(marks)})")
    return marks


async def _wait_until_up(base: str) -> None:
    from bench.load import Http

    for _ in range(150):
        try:
            code, _ = await Http(base).request("GET", "/login/")
            if code == 200:
                return
        except OSError:
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError("the server did not answer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", nargs="+", choices=["offline", "web"], default=["offline", "web"])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--port", type=int, default=8071)
    scratch_db.add_arguments(parser)
    args = parser.parse_args()
    if "offline" in args.part:
        offline(args.hours)
    if "web" in args.part:
        web(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
