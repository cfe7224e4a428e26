"""Steps 2 and 3 of the loop, inside the tick under the market row lock: tell the engine the ends Slurm
reported, and record the batches the engine started."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction

from marketplace.market.adapters import resource_types
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.slurm.models import SlurmReservation, SlurmStatus, SlurmTask
from marketplace.slurm.services.backend import anchor_set, arguments, sim_at
from marketplace.slurm.services.dispatch import dispatch_quietly

if TYPE_CHECKING:
    from simulator.market.engine import MarketEngine

log = logging.getLogger(__name__)

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
    token = anchor_set(market, engine.now)  # this tick's end: the wall time its clock stands for
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
    transaction.on_commit(lambda: dispatch_quietly(market.pk))
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
