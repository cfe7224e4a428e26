"""Step 4 of the loop, after the tick commits: submit the batches it started, exactly once."""

from __future__ import annotations

import logging
import math
from datetime import timedelta
from typing import TYPE_CHECKING

from django.db.models import Q
from django.utils import timezone

from marketplace.market.models.market import Market
from marketplace.slurm.client import SlurmError, SlurmUnavailable
from marketplace.slurm.models import SlurmReservation, SlurmTask
from marketplace.slurm.services.backend import arguments, slurm_client
from marketplace.slurm.services.reservations import reservations_sync

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------ 4. dispatch

def dispatch_quietly(market_id: int) -> None:
    """:func:`slurm_dispatch` after a tick's commit; an outage is logged (the claims wait for the controller)."""
    try:
        slurm_dispatch(market_id=market_id)
    except SlurmUnavailable as exc:  # the next poll records it; the rows wait for the controller
        log.warning("slurm: dispatch of market %s paused: %s", market_id, exc)


CLAIM_STALE_S = 30.0
"""A claim (rows ``submitting``) older than this belongs to a dispatcher that died: the next one looks
the batch's key up in Slurm and adopts the array, or submits it when Slurm never got it."""


def slurm_dispatch(*, market_id: int, sync_reservations: bool = True) -> int:
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
    if claimed and sync_reservations:  # the caller may have just synced them (the before-tick work)
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
