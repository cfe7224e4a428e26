"""The market's Plan decides, Slurm executes: launches become Slurm array jobs, Slurm's job states
become departures, its nodes become capacity, promises become advance reservations.

The loop, per market (``hooks.SlurmPart`` calls these from the clock):

1. :func:`slurm_poll` -- before a tick, outside any transaction: ``squeue --json`` and
   ``sinfo --json``; each task row takes the state Slurm reports (running, completed, failed; a
   submitted task Slurm no longer knows is lost); a partition whose nodes are drained or down is
   a capacity change (audited, so quotes see it); jobs that did not come from the market hold
   cores, which the engine sees as taken. An unreachable controller is recorded (since when) and
   nothing else changes: bids are still accepted, dispatch pauses.
2. :func:`engine_feed` -- inside the tick, under the market row lock: the ends the poll saw are
   told to the engine once (``applied``), completions as departures at the simulated time Slurm's
   end maps to, failures and losses as tasks to run again (up to ``max_retries`` retries each;
   the tenant pays for no failed work).
3. :func:`launches_record` -- inside the same tick, after its steps: each batch the engine started
   becomes rows (one per task), each kill marks the batch's rows for ``scancel``.
4. :func:`slurm_dispatch` -- after the tick commits, outside the lock: rows not yet submitted go
   to Slurm as one array per batch, carrying the batch's key in ``--comment``; a key Slurm already
   holds (a dispatcher killed after ``sbatch``) is adopted, never submitted twice.

Times: the market clock follows the wall clock times ``clock_speed`` (1 in production), so a
simulated time maps to a wall time through the last tick (``Market.clock_wall_at``,
``Market.sim_time``). A task runs its command for ``duration / clock_speed`` wall seconds.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from marketplace.market import hooks
from marketplace.market.adapters import resource_types
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.slurm.client import SlurmClient, SlurmError, SlurmJob, SlurmUnavailable
from marketplace.slurm.models import SlurmReservation, SlurmStatus, SlurmTask

if TYPE_CHECKING:
    from simulator.market.engine import MarketEngine

log = logging.getLogger(__name__)

FAILED_STATES = frozenset({"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"})
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING"})
LOST_AFTER_S = 30.0
"""A submitted task that ``squeue`` has not listed for this long is lost (Slurm's ``MinJobAge``,
300 s in the market's configuration, keeps a finished job listed far longer)."""

_CLIENT: SlurmClient | None = None


def slurm_client() -> SlurmClient:
    """The process's Slurm client (``settings.SLURM_CLIENT``: a dotted path to a class or factory)."""
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = import_string(settings.SLURM_CLIENT)()
    return _CLIENT


def use_client(client: SlurmClient | None) -> None:
    """Replace the process's client (tests point it at a fake); None: build it from the setting again."""
    global _CLIENT
    _CLIENT = client


@dataclass(frozen=True)
class Arguments:
    """The Slurm backend's own settings (``MarketPart.arguments``; staff set them per market).

    ``max_retries``: how often a failed or lost task runs again before its job is given up
    (each retry is a new Slurm job; failed work is never charged). ``commands``: the allow-list of
    what a task may run (the first is the default; the demo and the replays run ``sleep`` for the
    task's wall duration). ``time_limit_factor``: Slurm's time limit of a task is its wall duration
    times this, plus a minute (a task that overruns it failed).
    """

    max_retries: int = 2
    commands: tuple[str, ...] = ("sleep",)
    time_limit_factor: float = 3.0


def arguments(market: Market) -> Arguments:
    """The backend's arguments for ``market`` (defaults where staff set nothing)."""
    value = hooks.part_arguments(market, "slurm")
    assert isinstance(value, Arguments)
    return value


# ------------------------------------------------------------------------------ time

def _anchor(market: Market) -> tuple[datetime, float]:
    """(wall time, simulated time) of the market's last tick as this backend recorded it (its end);
    the market row's clock stamp before the first."""
    status = SlurmStatus.objects.filter(market_id=market.pk).only("anchor_wall", "anchor_sim").first()
    if status is not None and status.anchor_wall is not None:
        return status.anchor_wall, status.anchor_sim
    return market.clock_wall_at or timezone.now(), market.sim_time


def wall_at(market: Market, sim: float) -> datetime:
    """The wall-clock time of simulated time ``sim`` on the market's clock (``clock_speed`` simulated
    seconds per wall second since the last tick)."""
    wall, at = _anchor(market)
    return wall + timedelta(seconds=(sim - at) / market.clock_speed)


def sim_at(market: Market, wall: datetime) -> float:
    """The simulated time of wall-clock time ``wall`` on the market's clock (inverse of :func:`wall_at`)."""
    base, at = _anchor(market)
    return at + (wall - base).total_seconds() * market.clock_speed


def key_prefix(market_id: int) -> str:
    """``mkt<market>-<token>-``: what starts every task key and reservation name of this market in this
    installation (another database's market 1 on the same Slurm has another token)."""
    status, _ = SlurmStatus.objects.get_or_create(market_id=market_id)
    if not status.token:
        status.token = uuid.uuid4().hex[:8]
        status.save(update_fields=["token"])
    return f"mkt{market_id}-{status.token}-"


def _anchor_set(market: Market, sim: float) -> str:
    """Record the tick's anchor; returns the installation's token for task keys (made on first use)."""
    status, _ = SlurmStatus.objects.get_or_create(market_id=market.pk)
    status.anchor_wall, status.anchor_sim = timezone.now(), sim
    fields = ["anchor_wall", "anchor_sim"]
    if not status.token:
        status.token = uuid.uuid4().hex[:8]
        fields.append("token")
    status.save(update_fields=fields)
    return status.token


# ------------------------------------------------------------------------------ 1. poll

def slurm_poll(*, market_id: int) -> SlurmStatus:
    """Read Slurm's view and record it (outside any transaction; see the module's step 1).

    Returns the market's status row. Never raises for an unreachable controller: it is recorded.
    """
    client = slurm_client()
    status, _ = SlurmStatus.objects.get_or_create(market_id=market_id)
    now = timezone.now()
    # nodes and partitions change rarely: read every CAPACITY_POLL_S (and whenever the last poll failed)
    due = not status.reachable or status.polled_at is None or _capacity_due(market_id)
    try:
        jobs = client.jobs()  # pings first: at once when the controller is down
        partitions = client.partitions() if due else None
        nodes = client.nodes() if due else None
        version = status.version or client.version()
    except SlurmUnavailable as exc:
        if status.reachable or status.unreachable_since is None:
            status.unreachable_since = now
        status.reachable, status.error, status.polled_at = False, str(exc)[:300], now
        status.save()
        return status
    ours = _tasks_update(market_id, jobs, now, key_prefix(market_id))
    status.reachable, status.unreachable_since, status.error, status.version, status.polled_at = True, None, "", version, now
    status.foreign_cpus = _foreign_cpus(jobs, ours)
    if partitions is not None and nodes is not None:
        status.partitions = [p.as_json() for p in partitions]
        status.nodes = [n.as_json() for n in nodes]
    status.save()
    if partitions is not None:
        _capacity_follow(market_id, {p.name: p.usable_cpus for p in partitions})
    return status


CAPACITY_POLL_S = 5.0
_CAPACITY_READ: dict[int, float] = {}  # market -> time.monotonic() of this process's last partition read


def _capacity_due(market_id: int) -> bool:
    now = time.monotonic()
    if now - _CAPACITY_READ.get(market_id, -math.inf) < CAPACITY_POLL_S:
        return False
    _CAPACITY_READ[market_id] = now
    return True


def capacity_read_now() -> None:
    """Read the partitions at the next poll, whatever the period (tests; ``slurm_check --fix``)."""
    _CAPACITY_READ.clear()


def _tasks_update(market_id: int, jobs: Sequence[SlurmJob], now: datetime, prefix: str) -> set[int]:
    """Each live task row takes Slurm's state; returns the Slurm job ids that are this market's."""
    by_key: dict[tuple[str, int], SlurmJob] = {(j.comment, j.array_task_id): j for j in jobs if j.comment.startswith(prefix)}
    live = list(SlurmTask.objects.filter(market_id=market_id, state__in=(*SlurmTask.LIVE, SlurmTask.State.CANCELLING)))
    changed: list[SlurmTask] = []
    for task in live:
        job = by_key.get((task.key, task.index))
        if job is None:
            if task.state in (SlurmTask.State.SUBMITTED, SlurmTask.State.RUNNING) and task.submitted_at is not None \
                    and (now - task.submitted_at).total_seconds() > LOST_AFTER_S:
                task.state, task.reason, task.ended_at = SlurmTask.State.LOST, "Slurm no longer lists the job", now
                changed.append(task)
            continue
        if _take_state(task, job):
            changed.append(task)
    SlurmTask.objects.bulk_update(changed, ["state", "slurm_job_id", "slurm_state", "reason", "exit_code", "started_at", "ended_at"])
    return {j.job_id for j in jobs if j.comment.startswith(prefix)}


def _take_state(task: SlurmTask, job: SlurmJob) -> bool:
    """Copy Slurm's view of ``job`` onto ``task``; True when anything changed."""
    before = (task.state, task.slurm_state, task.reason, task.started_at, task.ended_at)
    task.slurm_job_id = task.slurm_job_id or job.array_job_id or job.job_id
    task.slurm_state, task.reason = job.state, job.reason[:200]
    if job.start_time is not None:
        task.started_at = job.start_time
    if task.state == SlurmTask.State.CANCELLING:
        pass  # the market cancelled it: scancel's answer decides (slurm_dispatch)
    elif job.state == "COMPLETED" and job.exit_code == 0:
        task.state, task.ended_at, task.exit_code = SlurmTask.State.COMPLETED, job.end_time or timezone.now(), 0
    elif job.state in FAILED_STATES or (job.state == "COMPLETED" and job.exit_code != 0) or job.state == "CANCELLED":
        task.state, task.ended_at, task.exit_code = SlurmTask.State.FAILED, job.end_time or timezone.now(), job.exit_code
        task.reason = (job.reason or job.state)[:200]
    elif job.state in RUNNING_STATES:
        task.state = SlurmTask.State.RUNNING
    return before != (task.state, task.slurm_state, task.reason, task.started_at, task.ended_at)


def _foreign_cpus(jobs: Sequence[SlurmJob], ours: set[int]) -> dict[str, int]:
    """Cores each partition's running jobs hold that did not come from the market (someone's sbatch)."""
    held: dict[str, int] = defaultdict(int)
    for j in jobs:
        if j.state in RUNNING_STATES and j.job_id not in ours and (j.array_job_id or 0) not in ours:
            held[j.partition] += j.cpus
    return dict(held)


def _capacity_follow(market_id: int, usable: dict[str, int]) -> None:
    """A partition whose usable cores (nodes neither drained nor down, capped by ``MaxCPUsPerNode``)
    differ from its resource type's capacity changes the capacity, audited: quotes see it."""
    from marketplace.market.services.config import resource_capacity_set

    for rt in ResourceType.objects.filter(market_id=market_id):
        cores = usable.get(rt.name)
        if cores is not None and cores >= 1 and cores != rt.capacity:
            log.warning("slurm: partition %s has %s usable cores, the market had %s", rt.name, cores, rt.capacity)
            resource_capacity_set(resource_type=rt, capacity=int(cores))


# ------------------------------------------------------------------------------ 2. feed

def engine_feed(*, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
    """Tell the engine the ends the poll saw, once each (inside the tick; module step 2), and take
    the cores held by jobs not from the market off its capacity."""
    status = SlurmStatus.objects.filter(market_id=market.pk).first()
    if status is not None and status.foreign_cpus:
        engine.set_capacity([max(0, t.capacity - int(status.foreign_cpus.get(t.name, 0))) for t in types])
    ended = list(SlurmTask.objects.filter(market_id=market.pk, state__in=SlurmTask.ENDED, applied=False).order_by("ended_at", "id"))
    if not ended:
        return
    limit = arguments(market).max_retries
    given_up: set[int] = set()
    for (batch, state), rows in _groups(ended):
        job_id = rows[0].job_id
        ends = [r.ended_at for r in rows if r.ended_at is not None]
        at = sim_at(market, max(ends)) if ends else engine.now
        at = min(max(at, rows[0].sim_start), engine.now)  # Slurm's seconds can fall a little outside the tick
        try:
            if state == SlurmTask.State.COMPLETED:
                engine.complete(batch, len(rows), at=at)
            else:
                engine.fail(batch, len(rows), at=at)  # they run again (a new Slurm job): failed work is no service
                if max(r.attempt for r in rows) > limit:
                    given_up.add(job_id)
        except (KeyError, ValueError):
            continue  # the job left meanwhile (cancelled) or the batch already ended: nothing to tell
    SlurmTask.objects.filter(pk__in=[r.pk for r in ended]).update(applied=True)
    if given_up:
        transaction.on_commit(lambda: _give_up(sorted(given_up), limit))


def _give_up(job_ids: list[int], limit: int) -> None:
    """Cancel jobs whose tasks failed more than ``limit`` retries, by the cancellation rule (they pay
    for the work that completed, never for failed work; docs/economy.md)."""
    from marketplace.auction.services import job_cancel

    for job in Job.objects.filter(pk__in=job_ids, status__in=Job.ACTIVE):
        log.warning("slurm: job %s failed more than %s retries; it is cancelled", job.pk, limit)
        try:
            job_cancel(job=job)
        except ValidationError as exc:  # it ended meanwhile
            log.info("slurm: job %s: %s", job.pk, exc)


def _groups(rows: Iterable[SlurmTask]) -> list[tuple[tuple[int, str], list[SlurmTask]]]:
    """Rows by (batch, ended state), in the order of their first end."""
    out: dict[tuple[int, str], list[SlurmTask]] = {}
    for r in rows:
        state = SlurmTask.State.COMPLETED if r.state == SlurmTask.State.COMPLETED else SlurmTask.State.FAILED
        out.setdefault((r.batch_key, state), []).append(r)
    return list(out.items())


# ------------------------------------------------------------------------------ 3. record

def launches_record(*, market: Market, engine: MarketEngine, types: list[ResourceType]) -> int:
    """Rows for the batches the tick's engine started, and kills marked for scancel (module step 3).
    Returns the number of task rows written. Registers :func:`slurm_dispatch` after the commit."""
    token = _anchor_set(market, engine.now)  # this tick's end: the wall time its clock stands for
    launches, kills = engine.take_launches(), engine.take_kills()
    if kills:
        SlurmTask.objects.filter(market_id=market.pk, batch_key__in=list(kills), state__in=SlurmTask.LIVE).update(
            state=SlurmTask.State.CANCELLING)
    if not launches and not kills:
        return 0
    args = arguments(market)
    attempts = _attempts(market.pk, {launch.job_id for launch in launches})
    held = _reservation_windows(market.pk)
    written = 0
    for launch in launches:
        rt = types[launch.j]
        wall = launch.duration_s / market.clock_speed
        attempt = attempts.get((launch.job_id, launch.j), 0) + 1
        window = held.get((launch.job_id, rt.pk))  # a reservation's units run inside its Slurm reservation
        inside = window is not None and not launch.shared and window[1] <= launch.start < window[2]
        rows = [SlurmTask(market=market, job_id=launch.job_id, resource_type=rt, batch_key=launch.key, index=i, key="",
                          partition=rt.name, reservation=window[0] if inside and window else "", command=args.commands[0],
                          sim_start=launch.start, duration=launch.duration_s, wall_seconds=wall, attempt=attempt)
                for i in range(launch.units)]
        first = SlurmTask.objects.bulk_create(rows[:1])[0]
        key = f"mkt{market.pk}-{token}-t{first.pk}"
        SlurmTask.objects.filter(pk=first.pk).update(key=key)
        for r in rows[1:]:
            r.key = key
        SlurmTask.objects.bulk_create(rows[1:])
        written += launch.units
    transaction.on_commit(lambda: _dispatch_quietly(market.pk))
    return written


def _attempts(market_id: int, job_ids: set[int]) -> dict[tuple[int, int], int]:
    """(job, resource column) -> tasks of it that failed or were lost so far (the next launch is a retry)."""
    if not job_ids:
        return {}
    columns = {t.pk: j for j, t in enumerate(resource_types(market_id))}
    out: dict[tuple[int, int], int] = defaultdict(int)
    for job_id, rt_id, attempt in SlurmTask.objects.filter(
            market_id=market_id, job_id__in=job_ids, state__in=(SlurmTask.State.FAILED, SlurmTask.State.LOST),
    ).values_list("job_id", "resource_type_id", "attempt"):
        key = (job_id, columns.get(rt_id, -1))
        out[key] = max(out[key], attempt)
    return out


def _reservation_windows(market_id: int) -> dict[tuple[int, int], tuple[str, float, float]]:
    """(job, resource type) -> (Slurm reservation name, simulated start, end) of the reservations Slurm holds."""
    return {(r.job_id, r.resource_type_id): (r.name, r.sim_start, r.sim_end)
            for r in SlurmReservation.objects.filter(market_id=market_id, created=True)}


# ------------------------------------------------------------------------------ 4. dispatch

def _dispatch_quietly(market_id: int) -> None:
    try:
        slurm_dispatch(market_id=market_id)
    except SlurmUnavailable as exc:  # the next poll records it; the rows wait for the controller
        log.warning("slurm: dispatch of market %s paused: %s", market_id, exc)


CLAIM_STALE_S = 30.0
"""A claim (rows ``submitting``) older than this belongs to a dispatcher that died: the next one looks
the batch's key up in Slurm and adopts the array, or submits it when Slurm never got it."""


def slurm_dispatch(*, market_id: int) -> int:
    """Submit the rows not yet submitted, one array per batch, and scancel what the market cancelled
    (module step 4). Returns the number of tasks submitted now.

    Exactly once: a dispatcher first claims a batch (its rows ``new`` -> ``submitting`` in one
    statement that only one dispatcher can win), then runs ``sbatch``, then records the array. A
    claim older than :data:`CLAIM_STALE_S` was left by a dispatcher that died between its claim and
    its record; its batch's key (in the array's ``--comment``) is looked up in Slurm and the array
    adopted, so nothing is submitted twice and nothing is forgotten. A fresh claim needs no look-up:
    ``squeue`` is read only to recover.

    Raises:
        SlurmUnavailable: the controller did not answer (nothing is lost: the claims go stale and are recovered).
    """
    client = slurm_client()
    cancelling = list(SlurmTask.objects.filter(market_id=market_id, state=SlurmTask.State.CANCELLING))
    if cancelling:
        ids = sorted({t.slurm_job_id for t in cancelling if t.slurm_job_id})
        if ids:
            client.cancel(ids)
        SlurmTask.objects.filter(pk__in=[t.pk for t in cancelling]).update(state=SlurmTask.State.CANCELLED, applied=True,
                                                                           slurm_state="CANCELLED", ended_at=timezone.now())
    now = timezone.now()
    stale = now - timedelta(seconds=CLAIM_STALE_S)
    rows = SlurmTask.objects.filter(market_id=market_id).filter(
        Q(state=SlurmTask.State.NEW) | Q(state=SlurmTask.State.SUBMITTING, submitted_at__lt=stale)).order_by("id")
    batches: dict[str, list[SlurmTask]] = {}
    for t in rows:
        batches.setdefault(t.key, []).append(t)
    if not batches:
        return 0
    claimed: dict[str, tuple[list[SlurmTask], bool]] = {}
    for key, group in batches.items():
        was = group[0].state
        won = SlurmTask.objects.filter(pk__in=[r.pk for r in group], state=was).filter(
            Q(submitted_at__isnull=True) | Q(submitted_at__lt=stale)).update(state=SlurmTask.State.SUBMITTING, submitted_at=now)
        if won == len(group):
            claimed[key] = (group, was == SlurmTask.State.SUBMITTING)
    if claimed:
        reservations_sync(market_id=market_id)  # a booking accepted in the tick that started its tasks: held in Slurm first
    held = {}
    for r in SlurmReservation.objects.filter(market_id=market_id, created=True):
        held.setdefault((r.job_id, r.resource_type_id), []).append(r)
    recovering = {key for key, (_, old) in claimed.items() if old}
    known = {j.comment: (j.array_job_id or j.job_id) for j in client.jobs() if j.comment in recovering} if recovering else {}
    factor = arguments(Market.objects.only("part_arguments").get(pk=market_id)).time_limit_factor
    submitted = 0
    for key, (group, _) in claimed.items():
        job_id = known.get(key)
        if job_id is None:
            first = group[0]
            first.reservation = first.reservation or _inside(held, first) or ""
            try:
                job_id = client.submit_array(
                    name=f"mkt{market_id}-job{first.job_id}", comment=key, partition=first.partition, count=len(group),
                    command=_command(first), time_limit_s=math.ceil(first.wall_seconds * factor) + 60,
                    reservation=first.reservation or None,
                )
            except SlurmUnavailable:  # gone mid-way: the claims not yet submitted go back to new
                pending = [r.pk for k, (g, _) in claimed.items() if k not in known for r in g]
                SlurmTask.objects.filter(pk__in=pending, state=SlurmTask.State.SUBMITTING, slurm_job_id__isnull=True).update(
                    state=SlurmTask.State.NEW, submitted_at=None)
                raise
            except SlurmError as exc:  # refused (a partition or reservation gone): a failure, retried by the rule
                SlurmTask.objects.filter(pk__in=[r.pk for r in group]).update(
                    state=SlurmTask.State.FAILED, reason=str(exc)[:200], ended_at=timezone.now())
                continue
            known[key] = job_id
            submitted += len(group)
        SlurmTask.objects.filter(pk__in=[r.pk for r in group], state=SlurmTask.State.SUBMITTING).update(
            state=SlurmTask.State.SUBMITTED, slurm_job_id=job_id, submitted_at=timezone.now(), reservation=group[0].reservation)
    return submitted


def _inside(held: dict[tuple[int, int], list[SlurmReservation]], task: SlurmTask) -> str | None:
    """The Slurm reservation a task runs in: its job's, of its type, whose window holds the task's start."""
    for r in held.get((task.job_id, task.resource_type_id), []):
        if r.sim_start - 1e-6 <= task.sim_start < r.sim_end:
            return r.name
    return None


def _command(task: SlurmTask) -> str:
    """What a task runs: the allowed command with the task's wall duration (``sleep 2.500``)."""
    if task.command == "sleep":
        return f"sleep {task.wall_seconds:.3f}"
    return task.command


# ------------------------------------------------------------------------------ 5. reservations

def reservations_sync(*, market_id: int) -> tuple[int, int]:
    """Make Slurm's advance reservations match the market's promises to active jobs (ERA
    reservations, deadline bookings: ``market.hooks.promised_windows``): create what is missing, delete
    what is no longer promised or has ended. Returns (created, deleted).

    Raises:
        SlurmUnavailable: the controller did not answer.
    """
    client = slurm_client()
    market = Market.objects.defer("engine_state").get(pk=market_id)
    types = resource_types(market_id)
    now = market.sim_time
    prefix = key_prefix(market_id)
    wanted: dict[str, tuple[int, ResourceType, int, float, float]] = {}
    for promise in hooks.promised_windows(market, types, now, math.inf):
        if promise.end <= now or promise.job_id is None:
            continue
        rt = types[promise.j]
        name = f"{prefix}job{promise.job_id}-{rt.name}"
        wanted[name] = (promise.job_id, rt, promise.units, promise.start, promise.end)  # the promise's window, as promised
    have = {r.name: r for r in SlurmReservation.objects.filter(market_id=market_id)}
    created = deleted = 0
    for name, r in have.items():
        if name not in wanted:
            if r.created:
                client.delete_reservation(name)
            r.delete()
            deleted += 1
    for name, (job_id, rt, units, start, end) in wanted.items():
        if name in have:
            continue
        starts, ends = wall_at(market, max(start, now)), wall_at(market, end)
        starts = max(starts, timezone.now() + timedelta(seconds=1))
        row = SlurmReservation.objects.create(market_id=market_id, job_id=job_id, resource_type=rt, name=name, units=units,
                                              sim_start=start, sim_end=end, starts_at=starts, ends_at=ends)
        client.create_reservation(name=name, partition=rt.name, cores=units, start=starts,
                                  duration_s=max(60, math.ceil((ends - starts).total_seconds())))
        SlurmReservation.objects.filter(pk=row.pk).update(created=True)
        created += 1
    return created, deleted


def describe(value: Any) -> str:
    """A short text for logs and pages."""
    return str(value)


def slurm_fix(*, market_id: int) -> tuple[list[str], list[str]]:
    """Repair what ``slurm_check`` found where it can: scancel orphan tasks, poll again (tasks Slurm no
    longer runs become ends the next tick tells the engine), recreate or delete advance reservations,
    follow Slurm's capacities. Returns (what was done, what could not be done).

    Raises:
        SlurmUnavailable: the controller did not answer.
    """
    from marketplace.slurm.selectors import differences

    client = slurm_client()
    market = Market.objects.defer("engine_state").get(pk=market_id)
    done, left = [], []
    found = differences(market=market, client=client)
    orphans = [d for d in found if d.kind == "orphan task"]
    if orphans:
        ids = sorted({int(d.subject.split()[-1].split("_")[0]) for d in orphans})
        client.cancel(ids)
        done.append(f"scancelled {len(orphans)} orphan task(s) of Slurm job(s) {', '.join(map(str, ids))}")
    stale = [d for d in found if d.kind in ("reservation unknown to the market", "reservation size")]
    redo = [d.subject for d in found if d.kind in ("reservation missing", "reservation size")]
    for d in stale:
        client.delete_reservation(d.subject)  # Slurm's copy goes; the market's promise is made again below
    if stale or redo:
        SlurmReservation.objects.filter(market_id=market_id, name__in=redo).delete()
        created, deleted = reservations_sync(market_id=market_id)
        done.append(f"reservations: {len(stale)} removed from Slurm, {created} created, {deleted} deleted")
    capacity_read_now()
    slurm_poll(market_id=market_id)  # capacities and task states as Slurm has them now
    done.append("polled Slurm: task states and capacities follow it (ended tasks are told to the engine at the next tick)")
    left += [str(d) for d in found if not d.fixable]
    return done, left
