"""``slurm_check --fix``: repair the differences between the market and Slurm that can be repaired."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from marketplace.market.models.market import Market
from marketplace.slurm.models import SlurmReservation
from marketplace.slurm.services.backend import slurm_client
from marketplace.slurm.services.poll import capacity_read_now, slurm_poll
from marketplace.slurm.services.reservations import reservations_sync

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

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
