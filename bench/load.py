"""Load test: simulated users against a running server on this machine, for a bounded time.

Each user loops: pick a request from its mix, send it, wait a think time drawn
uniformly from [--think-min, --think-max] seconds; every user stops after
--duration seconds. Loopback only (the URL's host must be 127.0.0.1 or localhost).

Mixes (weights):
  api    GET /api/market/ 15, /api/jobs/ 20, /api/market/series/?resource=map 10,
         /api/market/prices/ 10, /api/market/fairness/ 10, /api/account/ 10,
         /api/market/allocation/ 5; POST /api/jobs/ (a bid, with an Idempotency-Key) 12;
         POST /api/jobs/{id}/cancel/ (one of the user's own jobs) 8
  pages  GET / 20, /dashboard/data.json 35, /jobs/ 20, /account/ 15, /bid/ 10 (session login first)
  both   a third of the users on pages, the rest on the API

Users are tenants ``load-NN`` created here through Django (same DATABASE_URL as the
server) with an API token each. An error is a 5xx, a 429, a connection failure or
timeout, or a 4xx that the request could not expect (a cancel of a job that has
finished meanwhile answers 409, a state conflict, and is not an error).

With --conditional every GET carries If-None-Match with the ETag of the last 200 for the
same path (a 304 counts as a success); without it (the default) every GET asks for the
whole answer.

Prints, per request kind and overall: count, errors, median, p95 and p99 latency (ms),
requests per second, and the generator's own CPU time (it shares the cores with the
server: a lean HTTP/1.1 client on asyncio streams, one keep-alive connection per user).

Usage: .venv/bin/python bench/load.py --url http://127.0.0.1:8070 [--users 50] [--duration 60]
       [--think-min 0.2] [--think-max 1.0] [--mix api|pages|both] [--conditional]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlencode, urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.figures import python_additions_s, record, require  # noqa: E402

PASSWORD_PREFIX = "load-test-pw-"

API_MIX = [
    ("GET /api/market/", 15), ("GET /api/jobs/", 20), ("GET /api/market/series/", 10), ("GET /api/market/prices/", 10),
    ("GET /api/market/fairness/", 10), ("GET /api/account/", 10), ("GET /api/market/allocation/", 5),
    ("POST /api/jobs/", 12), ("POST cancel", 8),
]
PAGE_MIX = [("GET /", 20), ("GET /dashboard/data.json", 35), ("GET /jobs/", 20), ("GET /account/", 15), ("GET /bid/", 10)]
PATHS = {"GET /api/market/series/": "/api/market/series/?resource=map", "GET /api/market/fairness/": "/api/market/fairness/?resource=map",
         "GET /api/market/prices/": "/api/market/prices/?resource=map"}


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    codes: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    samples: list[str] = field(default_factory=list)

    def record(self, kind: str, seconds: float, ok: bool, code: int, detail: str = "") -> None:
        self.latencies[kind].append(seconds * 1000.0)
        self.codes[code] += 1
        if not ok:
            self.errors[kind] += 1
            if len(self.samples) < 5:
                self.samples.append(f"{kind}: {code} {detail[:160]}")


def make_users(n: int) -> list[tuple[str, str, str]]:
    """(username, password, token) of ``n`` load tenants on the first market (created once)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import Queue
    from marketplace.market.services.setup import tenant_create

    market = Market.objects.order_by("id").first()
    if market is None:
        sys.exit("no market: run `manage.py seed_demo` on this database first")
    leaves = [q for q in Queue.objects.filter(market=market).prefetch_related("children") if not q.children.all()]
    users = []
    User = get_user_model()
    for k in range(n):
        name = f"load-{k:02d}"
        password = PASSWORD_PREFIX + name
        user = User.objects.filter(username=name).first()
        if user is None:
            tenant = tenant_create(market=market, username=name, password=password, queue=leaves[k % len(leaves)],
                                   deposit=Decimal("1000000000"))
            user = tenant.user
        Token.objects.filter(user=user).delete()  # a fresh token (tokens expire)
        users.append((name, password, Token.objects.create(user=user).key))
    return users


def _market_counters() -> tuple[int, int, int]:
    from marketplace.market.models.market import Market

    m = Market.objects.order_by("id").values_list("clearings", "state_version", "cleared_version").first()
    return m if m is not None else (0, 0, 0)


class Http:
    """A minimal HTTP/1.1 client on one keep-alive connection (asyncio streams).

    The generator shares the machine's cores with the server it measures, so it must cost
    little per request: httpx's AsyncClient took about 2.7 ms of CPU a request here, this
    about a tenth of that. It speaks just what the mix needs: GET and POST with a JSON or
    form body, Content-Length or chunked answers, cookies (the session and CSRF ones) and
    reconnecting after the server closes a connection. ``If-None-Match`` is sent with the
    ETag of the last 200 for that path when ``conditional`` is set, as a polling client
    that keeps its answers does.
    """

    def __init__(self, base: str, headers: dict[str, str] | None = None, conditional: bool = False) -> None:
        u = urlparse(base)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.fixed = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{self.host}:{self.port}", **(headers or {})}.items())
        self.cookies: dict[str, str] = {}
        self.etags: dict[str, str] = {}
        self.conditional = conditional
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes | None = None, content_type: str = "",
                      headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        for attempt in (0, 1):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            head = f"{method} {path} HTTP/1.1\r\n{self.fixed}"
            if headers:
                head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            if self.cookies:
                head += "Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()) + "\r\n"
            if self.conditional and method == "GET" and path in self.etags:
                head += f"If-None-Match: {self.etags[path]}\r\n"
            if body is not None or method != "GET":
                body = body or b""
                head += f"Content-Length: {len(body)}\r\n" + (f"Content-Type: {content_type}\r\n" if content_type else "")
            self.writer.write(head.encode("latin-1") + b"\r\n" + (body or b""))
            try:
                return await self._answer(path)
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()  # the server closed a kept-alive connection: once more on a new one
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _answer(self, path: str) -> tuple[int, bytes]:
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("connection closed")
        code = int(status_line.split(b" ", 2)[1])
        length, chunked, close, etag = None, False, False, None
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
            elif name == "connection" and value.lower() == "close":
                close = True
            elif name == "set-cookie":
                k, _, v = value.split(";", 1)[0].partition("=")
                self.cookies[k.strip()] = v.strip()
            elif name == "etag":
                etag = value
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            data = b"".join(parts)
        elif length is not None:
            data = await self.reader.readexactly(length) if length else b""
        elif code in (204, 304) or 100 <= code < 200:
            data = b""
        else:
            data = await self.reader.read()
            close = True
        if close:
            await self.close()
        if code == 200 and etag is not None:
            self.etags[path] = etag
        return code, data


async def _send(client: Http, stats: Stats, kind: str, method: str, url: str, expect: tuple[int, ...] = (),
                body: bytes | None = None, content_type: str = "", headers: dict[str, str] | None = None) -> tuple[int, bytes] | None:
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(30):
            code, data = await client.request(method, url, body, content_type, headers)
    except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
        await client.close()
        stats.record(kind, time.perf_counter() - t0, False, 0, repr(exc))
        return None
    ok = code < 400 or code in expect
    stats.record(kind, time.perf_counter() - t0, ok, code, "" if ok else data.decode(errors="replace"))
    return code, data


RESERVE = 0.05  # credits per slot-second: the demo market's reserve price (seed_demo.DEMO_RESERVE)


def _bid_body(rng: random.Random) -> dict:
    """A bid of 1-10 map tasks of 5-60 s with a budget of 1-50 credits over the reserve price
    times its slot-seconds (a bid below that is refused with a 400, which the mix counts as an error)."""
    tasks, duration = rng.randint(1, 10), float(rng.randint(5, 60))
    budget = math.ceil(RESERVE * tasks * duration) + rng.randint(1, 50)
    return {"name": "load", "budget": str(budget), "utility": "linear",
            "work": [{"resource_type": "map", "tasks": tasks, "task_duration": duration}]}


async def api_user(base: str, token: str, stats: Stats, stop_at: float, think: tuple[float, float], seed: int,
                   conditional: bool = False) -> None:
    rng = random.Random(seed)
    kinds, weights = zip(*API_MIX, strict=True)
    mine: list[int] = []
    client = Http(base, {"Authorization": f"Token {token}", "Accept": "application/json"}, conditional=conditional)
    try:
        while time.monotonic() < stop_at:
            kind = rng.choices(kinds, weights)[0]
            if kind == "POST /api/jobs/":
                resp = await _send(client, stats, kind, "POST", "/api/jobs/", body=json.dumps(_bid_body(rng)).encode(),
                                   content_type="application/json", headers={"Idempotency-Key": uuid.uuid4().hex})
                if resp is not None and resp[0] == 201:
                    mine.append(json.loads(resp[1])["id"])
            elif kind == "POST cancel":
                if mine:
                    job = mine.pop(rng.randrange(len(mine)))
                    await _send(client, stats, kind, "POST", f"/api/jobs/{job}/cancel/", expect=(409,),
                                headers={"Idempotency-Key": uuid.uuid4().hex})
            else:
                path = PATHS.get(kind, kind.split(" ", 1)[1])
                await _send(client, stats, kind, "GET", path)
            await asyncio.sleep(rng.uniform(*think))
    finally:
        await client.close()


async def page_user(base: str, username: str, password: str, stats: Stats, stop_at: float, think: tuple[float, float], seed: int,
                    conditional: bool = False) -> None:
    rng = random.Random(seed)
    kinds, weights = zip(*PAGE_MIX, strict=True)
    client = Http(base, conditional=conditional)
    try:
        await _send(client, stats, "GET /login/", "GET", "/login/")
        form = urlencode({"username": username, "password": password, "csrfmiddlewaretoken": client.cookies.get("csrftoken", "")})
        await _send(client, stats, "POST /login/", "POST", "/login/", body=form.encode(),
                    content_type="application/x-www-form-urlencoded", headers={"Referer": f"{base}/login/"})
        while time.monotonic() < stop_at:
            kind = rng.choices(kinds, weights)[0]
            await _send(client, stats, kind, "GET", kind.split(" ", 1)[1])
            await asyncio.sleep(rng.uniform(*think))
    finally:
        await client.close()


def report(stats: Stats, wall: float, title: str) -> dict[str, float]:
    print(f"\n{title}")
    print(f"{'request':<28} {'count':>7} {'errors':>7} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9}")
    everything: list[float] = []
    for kind in sorted(stats.latencies):
        lat = sorted(stats.latencies[kind])
        everything += lat
        print(f"{kind:<28} {len(lat):>7} {stats.errors[kind]:>7} {statistics.median(lat):>9.1f} "
              f"{lat[int(0.95 * (len(lat) - 1))]:>9.1f} {lat[int(0.99 * (len(lat) - 1))]:>9.1f}")
    everything.sort()
    total, errors = len(everything), sum(stats.errors.values())
    p95 = everything[int(0.95 * (total - 1))] if total else float("nan")
    print(f"{'all':<28} {total:>7} {errors:>7} {statistics.median(everything) if total else float('nan'):>9.1f} {p95:>9.1f} "
          f"{everything[int(0.99 * (total - 1))] if total else float('nan'):>9.1f}")
    print(f"throughput: {total / wall:.1f} requests/s over {wall:.1f} s; status codes: {dict(sorted(stats.codes.items()))}")
    for line in stats.samples:
        print(f"  error sample: {line}")
    return {"rps": total / wall, "p95": p95, "errors": errors}


async def run(args: argparse.Namespace, users: list[tuple[str, str, str]]) -> dict[str, float]:
    base = args.url.rstrip("/")
    think = (args.think_min, args.think_max)
    stats = Stats()
    cpu0 = time.process_time()
    t0 = time.monotonic()
    stop_at = t0 + args.duration
    tasks = []
    for k, (name, password, token) in enumerate(users):
        on_pages = args.mix == "pages" or (args.mix == "both" and k % 3 == 0)
        if on_pages:
            tasks.append(page_user(base, name, password, stats, stop_at, think, seed=k, conditional=args.conditional))
        else:
            tasks.append(api_user(base, token, stats, stop_at, think, seed=k, conditional=args.conditional))
    await asyncio.gather(*tasks)
    figures = report(stats, time.monotonic() - t0, f"{args.users} users, {args.mix} mix, think {think[0]}-{think[1]} s, "
                     f"{args.duration:.0f} s against {base}{', with If-None-Match' if args.conditional else ''}")
    wall = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    print(f"load generator: {cpu:.1f} s CPU over {wall:.1f} s ({100 * cpu / wall:.0f}% of one core)")
    figures["bids"] = float(len(stats.latencies.get("POST /api/jobs/", []))) - stats.errors.get("POST /api/jobs/", 0)
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--url", default="http://127.0.0.1:8070")
    p.add_argument("--users", type=int, default=50)
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--think-min", type=float, default=0.2)
    p.add_argument("--think-max", type=float, default=1.0)
    p.add_argument("--mix", choices=("api", "pages", "both"), default="both")
    p.add_argument("--conditional", action="store_true",
                   help="send If-None-Match with the ETag of the last answer to the same path (a client that keeps answers)")
    args = p.parse_args()
    host = urlparse(args.url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit(f"load tests run against this machine only (got host {host!r})")
    if not 0 < args.duration <= 600:
        sys.exit("--duration must be in (0, 600] seconds")
    users = make_users(args.users)  # synchronous Django, before the event loop starts
    before = _market_counters()
    additions = python_additions_s()
    figures = asyncio.run(run(args, users))
    after = _market_counters()
    print(f"market during the run: {after[0] - before[0]} clearings, state version {before[1]} -> {after[1]}, "
          f"cleared version {before[2]} -> {after[2]}")
    print(f"10^7 pure-Python additions: {additions:.2f} s (the goals are for about 0.6 s)")
    if args.mix == "api" and os.environ.get("BENCH_FIGURES"):  # make bench's row: the API mix at saturation
        require(figures["rps"] > 0 and figures["bids"] > 0, f"the mix was served, bids included ({figures['bids']:.0f} bids accepted)")
        require(after[0] > before[0], "the market cleared during the run")
        name = f"API mix, {args.users} users, {'PostgreSQL' if 'postgres' in os.environ.get('DATABASE_URL', '') else 'SQLite'}"
        record(f"{name}: throughput", figures["rps"], unit="req/s", goal=400.0, note=f"10^7 additions {additions:.2f} s")
        record(f"{name}: p95 latency", figures["p95"], unit="ms", goal=400.0, better="lower")
        record(f"{name}: errors", figures["errors"], unit="requests", note="the goal is 0")


if __name__ == "__main__":
    main()
