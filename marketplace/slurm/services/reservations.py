"""The market's promises (ERA reservations, deadline bookings) as Slurm advance reservations."""

from __future__ import annotations

import logging
import math
from datetime import timedelta
from typing import TYPE_CHECKING

from django.utils import timezone

from marketplace.market import hooks
from marketplace.market.adapters import resource_types
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.slurm.models import SlurmReservation
from marketplace.slurm.services.backend import key_prefix, slurm_client, wall_at

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

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
