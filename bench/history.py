"""A big installation's history in bulk, for ``bench/bench_history.py`` (PostgreSQL).

:func:`installation` builds the market and its tenants through the services and lets them
write one of each row the history needs (a bid placed, cleared, run to the end and settled; a
staff credit and debit; ticks' samples). :func:`fill` copies those rows, with new ids,
owners, amounts and times, into the tables with ``COPY``: finished jobs and their work rows,
the ledger (running balances kept, accounts updated to what the entries sum to), and a day of
samples. Money is written in the ledger's 4 decimal places.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone

DAY_S = 86_400.0
STAFF_KINDS = ("credit", "debit")


@dataclass
class Installation:
    market: Any
    tenants: list[Any]
    staff: Any
    rng: random.Random
    templates: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    placed: int = 0


def installation(*, tenants: int, seed: int) -> Installation:
    """The market, ``tenants`` tenants (the first is the measured one), a staff member, and the
    template rows the services wrote; the clock then stands a day after the market opened."""
    from django.contrib.auth import get_user_model

    from marketplace.auction.services import WorkItem, bid_submit, job_cancel
    from marketplace.ledger.services import account_adjust
    from marketplace.management.commands.seed_demo import DEMO_HIERARCHY
    from marketplace.market.models.allocation import AllocationSnapshot, FairnessSample, MarketSample, PriceSample, SpotSettlement
    from marketplace.market.models.jobs import Job, JobWork
    from marketplace.market.models.queues import Queue
    from marketplace.market.services.clearing import market_clear
    from marketplace.market.services.clock import cluster_advance
    from marketplace.market.services.setup import market_create, tenant_create

    market = market_create(name="bench-history", resources={"map": 40, "reduce": 20}, hierarchy=DEMO_HIERARCHY)
    leaves = [q for q in Queue.objects.filter(market=market).order_by("id") if not q.children.exists()]
    people = [tenant_create(market=market, username=f"tenant-{k:03d}", password=None, queue=leaves[k % len(leaves)],
                            deposit=Decimal("1e9")) for k in range(tenants)]
    staff = get_user_model().objects.create_user("history-staff", password=None, is_staff=True)
    world = Installation(market, people, staff, random.Random(seed))
    job = bid_submit(tenant=people[0], budget="60", work=[WorkItem("map", 4, 10.0), WorkItem("reduce", 2, 20.0)])
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=600.0)
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED, job.status
    spare = bid_submit(tenant=people[0], budget="30", work=[WorkItem("map", 1, 10.0)])
    job_cancel(job=spare, user=people[0].user)  # its release of the hold (a finished job paying its whole budget has none)
    for direction in STAFF_KINDS:
        account_adjust(tenant=people[0], direction=direction, amount=Decimal("5"), reason=f"{direction} by staff", user=staff)
    cluster_advance(market_id=market.pk, until=DAY_S)  # nothing active: the clock moves on to a day
    last = MarketSample.objects.filter(market=market).order_by("-sim_time").values_list("sim_time", flat=True).first()
    snapshot = AllocationSnapshot.objects.filter(market=market, prices__isnull=False).order_by("-id").first()
    world.templates = {
        "job": _rows(Job.objects.filter(pk=job.pk)),
        "work": _rows(JobWork.objects.filter(job=job).order_by("id")),
        "entries": _rows(job.ledger_entries.order_by("id")) + _rows(spare.ledger_entries.filter(kind="release")),
        "staff": _rows(people[0].account.entries.filter(kind__in=STAFF_KINDS).order_by("id")),
        "market_samples": _rows(MarketSample.objects.filter(market=market, sim_time=last)),
        "fairness_samples": _rows(FairnessSample.objects.filter(market=market, sim_time=last)),
        "snapshot": _rows(AllocationSnapshot.objects.filter(pk=snapshot.pk)) if snapshot else [],
        "prices": _rows(PriceSample.objects.filter(snapshot=snapshot)) if snapshot else [],
        "settlements": _rows(SpotSettlement.objects.filter(market=market).order_by("id")[:2]),
    }
    empty = [name for name, rows in world.templates.items() if not rows]
    assert not empty, f"the services wrote no {empty} rows to copy"
    return world


def _rows(queryset: Any) -> list[dict[str, Any]]:
    names = [f.attname for f in queryset.model._meta.concrete_fields]
    return list(queryset.values(*names))


def fill(world: Installation, *, jobs: int, entries: int, sample_s: float, seed: int) -> dict[str, int]:
    """Copy the templates into the history (module docstring); the rows written, by kind."""
    from marketplace.ledger.models import Account, LedgerEntry
    from marketplace.market.models.allocation import AllocationSnapshot, FairnessSample, MarketSample, PriceSample, SpotSettlement
    from marketplace.market.models.jobs import Job, JobWork

    rng = random.Random(seed)
    t = world.templates
    now = timezone.now()
    tenants = world.tenants
    weights = [0.25] + [0.75 / max(1, len(tenants) - 1)] * (len(tenants) - 1)  # the measured tenant: a quarter
    owner = rng.choices(range(len(tenants)), weights, k=jobs)
    finish = sorted(rng.uniform(600.0, DAY_S - 600.0) for _ in range(jobs))
    job_id0 = _next_id(Job)
    job_rows, work_rows, settle_rows, money = [], [], [], []
    for k in range(jobs):
        tenant = tenants[owner[k]]
        budget = rng.randint(20_0000, 500_0000)  # in 1e-4 credits
        charged = rng.randint(budget // 4, budget)
        start = finish[k] - rng.uniform(30.0, 600.0)
        pk = job_id0 + k
        when = now - timedelta(seconds=DAY_S - finish[k])
        job_rows.append(t["job"][0] | {"id": pk, "tenant_id": tenant.pk, "queue_id": tenant.default_queue_id,
                                        "name": f"batch-{k % 97}", "job_class": f"batch-{k % 97}", "budget": _money(budget),
                                        "charged": _money(charged), "sim_submit_time": start - rng.uniform(0.0, 120.0),
                                        "sim_start_time": start, "sim_finish_time": finish[k], "submitted_at": when,
                                        "finished_at": when})
        work_rows += [w | {"id": None, "job_id": pk} for w in t["work"]]
        settle_rows += [s | {"id": None, "tenant_id": tenant.pk, "sim_time": finish[k], "pooled": True} for s in t["settlements"]]
        money.append((finish[k], owner[k], pk, budget, charged, when))
    _copy(Job, job_rows)
    _copy(JobWork, work_rows)
    _copy(SpotSettlement, settle_rows)
    n_entries = _fill_ledger(world, money, entries - 3 * jobs, rng, now)
    n_samples = _fill_samples(world, sample_s, now)
    for model in (Job, JobWork, SpotSettlement, LedgerEntry, AllocationSnapshot, PriceSample, MarketSample, FairnessSample, Account):
        _reset_sequence(model)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # as autovacuum leaves a table that has grown (visibility map, statistics)
    return {"finished jobs": Job.objects.filter(market=world.market, status=Job.Status.FINISHED).count(),
            "work rows": len(work_rows), "ledger entries": n_entries, "samples": n_samples, "settlements": len(settle_rows)}


def _fill_ledger(world: Installation, jobs: list[tuple[float, int, int, int, int, Any]], staff_entries: int,
                 rng: random.Random, now: Any) -> int:
    """Each job's hold, charge and release, and ``staff_entries`` staff credits and debits, in time
    order with each account's running balances; the accounts end at the balances the entries sum to."""
    from marketplace.ledger.models import Account, LedgerEntry

    t = world.templates
    hold, charge, release = (next(e for e in t["entries"] if e["kind"] == kind) for kind in ("hold", "charge", "release"))
    credit, debit = (next(e for e in t["staff"] if e["kind"] == kind) for kind in STAFF_KINDS)
    accounts = {a.tenant_id: a for a in Account.objects.filter(tenant__in=world.tenants)}
    balance = {k: [int(accounts[p.pk].available * 10_000), int(accounts[p.pk].held * 10_000)] for k, p in enumerate(world.tenants)}
    events: list[tuple[float, int, int, int, int, Any]] = list(jobs)
    owners = rng.choices(range(len(world.tenants)), [3.0 if k == 0 else 1.0 for k in range(len(world.tenants))], k=max(0, staff_entries))
    for who in owners:
        at = rng.uniform(0.0, DAY_S)
        events.append((at, who, 0, rng.randint(1_0000, 100_0000), 0, now - timedelta(seconds=DAY_S - at)))
    events.sort(key=lambda e: e[0])
    rows = []
    for _, who, job, amount, charged, when in events:
        b = balance[who]
        account = accounts[world.tenants[who].pk].pk
        if job:
            rest = amount - charged
            moves = [(hold, amount, -amount, amount), (charge, charged, 0, -charged), (release, rest, rest, -rest)]
        else:
            debit_it = b[0] > amount and rng.random() < 0.5
            moves = [(debit, amount, -amount, 0)] if debit_it else [(credit, amount, amount, 0)]
        for template, value, d_avail, d_held in moves:
            if value <= 0:
                continue
            b[0] += d_avail
            b[1] += d_held
            memo = template["memo"].replace(str(template["job_id"]), str(job)) if job else template["memo"]
            rows.append(template | {"id": None, "account_id": account, "amount": _money(value), "available_delta": _money(d_avail),
                                    "held_delta": _money(d_held), "available_after": _money(b[0]), "held_after": _money(b[1]),
                                    "job_id": job or None, "memo": memo, "created_at": when})
    _copy(LedgerEntry, rows)
    for k, tenant in enumerate(world.tenants):
        Account.objects.filter(pk=accounts[tenant.pk].pk).update(available=_money(balance[k][0]), held=_money(balance[k][1]))
    return LedgerEntry.objects.count()


def _fill_samples(world: Installation, sample_s: float, now: Any) -> int:
    """A day of a tick's samples and a clearing's record with its prices, every ``sample_s`` seconds."""
    from marketplace.market.models.allocation import AllocationSnapshot, FairnessSample, MarketSample, PriceSample

    t = world.templates
    steps = [k * sample_s for k in range(1, int(DAY_S // sample_s))]
    snap0 = _next_id(AllocationSnapshot)
    _copy(MarketSample, [s | {"id": None, "sim_time": at} for at in steps for s in t["market_samples"]])
    _copy(FairnessSample, [s | {"id": None, "sim_time": at} for at in steps for s in t["fairness_samples"]])
    _copy(AllocationSnapshot, [t["snapshot"][0] | {"id": snap0 + k, "sim_time": at, "plan": None,
                                                    "created_at": now - timedelta(seconds=DAY_S - at)} for k, at in enumerate(steps)])
    _copy(PriceSample, [p | {"id": None, "snapshot_id": snap0 + k, "sim_time": at} for k, at in enumerate(steps) for p in t["prices"]])
    return len(steps) * (len(t["market_samples"]) + len(t["fairness_samples"]) + 1 + len(t["prices"]))


def _money(units: int) -> str:
    """An amount in 1e-4 credits as the ledger's decimal text."""
    sign, units = ("-", -units) if units < 0 else ("", units)
    return f"{sign}{units // 10_000}.{units % 10_000:04d}"


def _next_id(model: type[models.Model]) -> int:
    return int((model.objects.aggregate(m=models.Max("id"))["m"] or 0) + 1)


def _copy(model: type[models.Model], rows: Sequence[dict[str, Any]]) -> None:
    """``COPY`` ``rows`` (dicts by attribute name) into ``model``'s table; an ``id`` of None is left to the sequence."""
    if not rows:
        return
    meta = model._meta
    names = [name for name in rows[0] if not (name == "id" and rows[0]["id"] is None)]
    by_attname = {f.attname: f for f in meta.concrete_fields}
    fields = [by_attname[name] for name in names]
    prep: list[Callable[[Any], Any]] = [_prepare(f) for f in fields]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)  # type: ignore[union-attr]
    statement = f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN"
    with transaction.atomic(), connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in _values(rows, names, prep):
            copy.write_row(row)


def _values(rows: Iterable[dict[str, Any]], names: list[str], prep: list[Callable[[Any], Any]]) -> Iterable[list[Any]]:
    for row in rows:
        yield [p(row[n]) for n, p in zip(names, prep, strict=True)]


def _prepare(f: Any) -> Callable[[Any], Any]:
    if isinstance(f, models.JSONField):
        return lambda v: f.get_db_prep_save(v, connection)
    return lambda v: v


def _reset_sequence(model: type[models.Model]) -> None:
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT COALESCE(MAX(id), 1) FROM {table}))")


def place_active(world: Installation, *, count: int) -> None:
    """``count`` bids through the service, spread over the tenants, then a clearing."""
    from marketplace.market.services.clearing import market_clear

    _bids(world, count)
    market_clear(market_id=world.market.pk)


def replace_departed(world: Installation, *, count: int) -> None:
    """As many new bids as jobs departed in the last tick (the worker's clearing follows, untimed)."""
    from marketplace.market.services.clearing import market_clear

    if count:
        _bids(world, count)
        market_clear(market_id=world.market.pk)


def _bids(world: Installation, count: int) -> None:
    from marketplace.auction.services import WorkItem, bid_submit
    from marketplace.market.services.market import clearings_deferred

    rng = world.rng
    with clearings_deferred(), transaction.atomic():
        for _ in range(count):
            work = [WorkItem("map", rng.randint(1, 49), 10.0, rng.uniform(0.5, 2)),
                    WorkItem("reduce", rng.randint(1, 9), 20.0, rng.uniform(0.5, 2))]
            tenant = world.tenants[world.placed % len(world.tenants)]
            bid_submit(tenant=tenant, budget=str(rng.randint(60, 200)), work=work)
            world.placed += 1


def targets(world: Installation) -> dict[str, tuple[Callable[[], Any], Callable[[Any], bool]]]:
    """name -> (a request as the measured tenant, whether its answer has rows)."""
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from marketplace.market.models.jobs import Job

    tenant = world.tenants[0]
    page = Client()
    page.force_login(tenant.user)
    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=tenant.user).key}")
    jobs = Job.objects.filter(tenant=tenant).count()
    entries = tenant.account.entries.count()
    waiting = Job.objects.filter(tenant=tenant, status=Job.Status.QUEUED).order_by("id").values_list("id", flat=True).first()
    assert waiting is not None, "a queued job of the measured tenant"
    far_jobs, far_entries = (min(100, max(1, n // 50 // 2)) for n in (jobs, entries))  # 5,000 rows back at most

    def results(resp: Any) -> bool:
        return bool(resp.json()["results"])

    def table(resp: Any) -> bool:
        return resp.content.count(b"<tr") > 10

    return {
        "jobs page": (lambda: page.get("/jobs/"), table),
        "jobs API, page 1": (lambda: api.get("/api/jobs/"), results),
        f"jobs API, page {far_jobs}": (lambda: api.get(f"/api/jobs/?page={far_jobs}"), results),
        "account page": (lambda: page.get("/account/"), table),
        "account API": (lambda: api.get("/api/account/"), lambda r: "available" in r.json()),
        "ledger API, page 1": (lambda: api.get("/api/account/ledger/"), results),
        f"ledger API, page {far_entries}": (lambda: api.get(f"/api/account/ledger/?page={far_entries}"), results),
        "dashboard data": (lambda: page.get("/dashboard/data.json"), lambda r: len(r.content) > 1000),
        "market series API": (lambda: api.get("/api/market/series/?resource=map"), lambda r: len(r.content) > 1000),
        "why-waiting": (_WaitingRequest(api, tenant, waiting), lambda r: r.json()["waiting"] is True),
    }


class _WaitingRequest:
    """The why-waiting request of a job that waits now: ``prepare()`` (untimed) finds it, the call asks."""

    def __init__(self, api: Any, tenant: Any, first: int) -> None:
        self.api, self.tenant, self.job = api, tenant, first

    def prepare(self) -> None:
        self.job = _waiting(self.tenant, self.job)

    def __call__(self) -> Any:
        return self.api.get(f"/api/jobs/{self.job}/waiting/")


def _waiting(tenant: Any, first: int) -> int:
    """A job of ``tenant`` that waits now, else ``first``: an active job with a pending task, what the why-waiting
    explanation explains (``fairshare.selectors.job_waiting``). A queued job with one idle type (``running=0``) was
    not enough: the type may have finished, with nothing pending."""
    from marketplace.market.models.jobs import Job

    pk = (Job.objects.filter(tenant=tenant, status__in=Job.ACTIVE, work__pending__gt=0).order_by("-id")
          .values_list("id", flat=True).first())
    return int(pk or first)
