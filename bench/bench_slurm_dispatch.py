"""The market on Slurm: dispatch latency (a Plan's start -> the task RUNNING in Slurm) and the
sustained task start rate, each against Slurm's own figure for the same work on the same machine.

1. Latency: a bid of 40 one-second map tasks (60 simulated s at clock speed 60). For each task, the
   time from the tick that started it (its row is written in that tick's transaction) to the first
   ``squeue`` that shows it RUNNING (polled every 50 ms in a thread). Slurm's own: the same poll
   from ``sbatch`` of a bare 40-task array to each element RUNNING.
2. Start rate: a bid of 400 map tasks of 0.2 s (12 simulated s) on the 40-core map partition, the
   clock ticking every 0.1 s; starts per second from ``sdiag``'s "Jobs started" between 10 % and 90 %
   of the tasks, against a 400-task ``sbatch --array`` of ``sleep 0.2`` (``bench_slurm_array``' measure).
   The two run alternately, ``--rounds`` times, and the medians are compared.

Requires a running Slurm (``make slurm-up``); asserts that every task ran (``sdiag``'s started count
rose by the tasks, each element COMPLETED) and that every market job finished and was charged.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root
_TMP = tempfile.mkdtemp(prefix="bench-slurm-")
os.environ["DATABASE_URL"] = f"sqlite:///{_TMP}/db.sqlite3"
os.environ["CLUSTER_BACKEND"] = "slurm"
os.environ.pop("REDIS_URL", None)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")

import django  # noqa: E402

django.setup()

from decimal import Decimal  # noqa: E402

from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.bench_slurm_array import slope  # noqa: E402
from bench.figures import python_additions_s, record, require, run_guarded  # noqa: E402
from marketplace.auction.models import WorkItem  # noqa: E402
from marketplace.auction.services import bid_submit  # noqa: E402
from marketplace.ledger.services import account_deposit  # noqa: E402
from marketplace.market.models.jobs import Job  # noqa: E402
from marketplace.market.models.market import Market  # noqa: E402
from marketplace.market.models.queues import ResourceType  # noqa: E402
from marketplace.market.models.tenants import Tenant  # noqa: E402
from marketplace.market.services.clock import cluster_advance  # noqa: E402
from marketplace.slurm.client import CliSlurmClient, SlurmError, SlurmUnavailable  # noqa: E402
from marketplace.slurm.models import SlurmTask  # noqa: E402

SPEED = 60.0


class RunningWatch:
    """First wall time (time.time()) each (comment, index) was seen RUNNING or later, polling squeue."""

    def __init__(self, client: CliSlurmClient, prefix: str) -> None:
        self.client, self.prefix, self.seen, self._stop = client, prefix, {}, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RunningWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            for j in self.client.jobs():
                if j.comment.startswith(self.prefix) and j.state in ("RUNNING", "COMPLETING", "COMPLETED"):
                    self.seen.setdefault((j.comment, j.array_task_id), now)
            time.sleep(0.05)


def _p(values: list[float], q: float) -> float:
    return float(sorted(values)[min(len(values) - 1, int(q * len(values)))])


def _budget(market: Market, slot_seconds: float) -> str:
    """100 credits above what the map type's reserve price asks for ``slot_seconds`` of work (a bid below it is refused)."""
    reserve = float(ResourceType.objects.get(market=market, name="map").reserve_price)
    return f"{100 + reserve * slot_seconds:.2f}"


def market_latency(market: Market, tenant: Tenant, client: CliSlurmClient, tasks: int) -> list[float]:
    before = set(SlurmTask.objects.values_list("id", flat=True))
    with RunningWatch(client, f"mkt{market.pk}-") as watch:
        job = bid_submit(tenant=tenant, budget=_budget(market, tasks * SPEED), work=[WorkItem("map", tasks, SPEED, 1.0)])
        _drive(market, [job], tick=0.1, timeout=60)
    rows = [t for t in SlurmTask.objects.filter(job=job) if t.pk not in before]
    require(len(rows) == tasks and all((r.key, r.index) in watch.seen for r in rows),
            f"every one of {tasks} tasks seen RUNNING on Slurm ({len(watch.seen)} seen)")
    return [watch.seen[(r.key, r.index)] - r.created_at.timestamp() for r in rows]


def slurm_latency(client: CliSlurmClient, tasks: int) -> list[float]:
    key = f"benchlat{int(time.time() * 1000)}"
    with RunningWatch(client, key) as watch:
        t0 = time.time()
        client.submit_array(name="bench-latency", comment=key, partition="map", count=tasks, command="sleep 1", time_limit_s=60)
        deadline = time.time() + 60
        while len(watch.seen) < tasks and time.time() < deadline:
            time.sleep(0.05)
    require(len(watch.seen) == tasks, f"all {tasks} array elements seen RUNNING ({len(watch.seen)})")
    return [t - t0 for t in watch.seen.values()]


def _drive(market: Market, jobs: list[Job], *, tick: float, timeout: float) -> None:
    last, deadline = time.monotonic(), time.monotonic() + timeout
    while Job.objects.filter(pk__in=[j.pk for j in jobs], status__in=Job.ACTIVE).exists():
        require(time.monotonic() < deadline, f"the market's jobs to finish within {timeout:.0f} s")
        time.sleep(tick)
        now = time.monotonic()
        cluster_advance(market_id=market.pk, seconds=SPEED * (now - last))
        last = now


def market_rate(market: Market, tenant: Tenant, client: CliSlurmClient, tasks: int, seconds: float) -> float:
    before = client.diag()
    samples: list[tuple[float, int]] = []
    job = bid_submit(tenant=tenant, budget=_budget(market, tasks * seconds * SPEED), work=[WorkItem("map", tasks, seconds * SPEED, 1.0)])
    t0, last = time.perf_counter(), time.monotonic()
    while Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).exists():
        require(time.perf_counter() - t0 < 300, "the 400-task job to finish within 300 s")
        time.sleep(0.1)
        now = time.monotonic()
        cluster_advance(market_id=market.pk, seconds=SPEED * (now - last))
        last = now
        samples.append((time.perf_counter() - t0, client.diag().started - before.started))
    job.refresh_from_db()
    require(job.status == Job.Status.FINISHED and job.charged > 0, "the job finished and was charged")
    started = client.diag().started - before.started
    require(started >= tasks, f"sdiag's Jobs started to rise by {tasks} (rose by {started})")
    middle = [(t, c) for t, c in samples if 0.1 * tasks <= c <= 0.9 * tasks]
    return slope(middle) if len(middle) >= 3 else tasks / (time.perf_counter() - t0)


def array_rate(client: CliSlurmClient, tasks: int, seconds: float) -> float:
    before = client.diag()
    key = f"benchrate{int(time.time() * 1000)}"
    t0 = time.perf_counter()
    client.submit_array(name="bench-rate", comment=key, partition="map", count=tasks, command=f"sleep {seconds:g}", time_limit_s=60)
    samples: list[tuple[float, int]] = []
    while True:
        d = client.diag()
        samples.append((time.perf_counter() - t0, d.started - before.started))
        if d.completed - before.completed >= tasks or time.perf_counter() - t0 > 300:
            break
        time.sleep(0.1)
    done = [j for j in client.jobs() if j.comment == key and j.state == "COMPLETED" and j.exit_code == 0]
    require(len(done) == tasks, f"every array element COMPLETED with exit 0 ({len(done)} of {tasks})")
    middle = [(t, c) for t, c in samples if 0.1 * tasks <= c <= 0.9 * tasks]
    return slope(middle) if len(middle) >= 3 else tasks / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=0.2)
    args = parser.parse_args(argv)
    print(f"10^7 pure-Python additions: {python_additions_s():.2f} s")
    client = CliSlurmClient()
    try:
        caps = {p.name: p.usable_cpus for p in client.partitions()}
    except (SlurmUnavailable, SlurmError) as exc:
        if os.environ.get("CI"):
            print(f"CI requires Slurm: {exc}", file=sys.stderr)
            return 1
        print(f"skipped: Slurm is not running here ({exc}); start it with `make slurm-up` (as root)")
        return 0
    call_command("migrate", verbosity=0)
    call_command("seed_demo", verbosity=0)
    market = Market.objects.get()
    Market.objects.filter(pk=market.pk).update(clock_speed=SPEED, clock_wall_at=timezone.now())
    market.refresh_from_db()
    require(caps.get("map") == market.resource_types.get(name="map").capacity, f"Slurm's map partition is the market's ({caps})")
    tenant = Tenant.objects.filter(market=market).order_by("id").first()
    require(tenant is not None, "a demo tenant")
    account_deposit(account=tenant.account, amount=Decimal("100000"), memo="benchmark")
    ours, theirs, m_rate, s_rate = [], [], [], []
    for _ in range(args.rounds):
        ours += market_latency(market, tenant, client, 40)
        theirs += slurm_latency(client, 40)
        m_rate.append(market_rate(market, tenant, client, args.tasks, args.seconds))
        s_rate.append(array_rate(client, args.tasks, args.seconds))
    print(f"latency market p50 {_p(ours, 0.5):.2f} s p95 {_p(ours, 0.95):.2f} s; Slurm's own p50 {_p(theirs, 0.5):.2f} s "
          f"p95 {_p(theirs, 0.95):.2f} s ({len(ours)} tasks each)")
    print(f"start rate market {[round(x, 1) for x in m_rate]} /s; Slurm array {[round(x, 1) for x in s_rate]} /s")
    record("Slurm dispatch latency p50 (Plan start -> RUNNING)", _p(ours, 0.5), unit="s")
    record("Slurm dispatch latency p95 above Slurm's own p95", _p(ours, 0.95) - _p(theirs, 0.95), unit="s", goal=1.0, better="lower")
    ratio = statistics.median(m_rate) / statistics.median(s_rate)
    record(f"Slurm: market start rate / Slurm's array rate ({args.tasks} x {args.seconds:g} s)", ratio, unit="x", goal=0.8)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
