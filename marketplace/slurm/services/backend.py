"""The backend's client, its arguments, the keys it marks Slurm's jobs with, and the map between Slurm's
wall times and the market clock."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string

from marketplace.market import hooks
from marketplace.market.models.market import Market
from marketplace.slurm.client import SlurmClient
from marketplace.slurm.models import SlurmStatus

if TYPE_CHECKING:
    pass

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


def _status(market_id: int) -> tuple[SlurmStatus, list[str]]:
    """The market's status row, its installation token made on first use (and the fields to save for it)."""
    status, _ = SlurmStatus.objects.get_or_create(market_id=market_id)
    if status.token:
        return status, []
    status.token = uuid.uuid4().hex[:8]
    return status, ["token"]


def key_prefix(market_id: int) -> str:
    """``mkt<market>-<token>-``: what starts every task key and reservation name of this market in this
    installation (another database's market 1 on the same Slurm has another token)."""
    status, fields = _status(market_id)
    if fields:
        status.save(update_fields=fields)
    return f"mkt{market_id}-{status.token}-"


def anchor_set(market: Market, sim: float) -> str:
    """Record the tick's anchor (its end's wall time and simulated time); returns the installation's token."""
    status, fields = _status(market.pk)
    status.anchor_wall, status.anchor_sim = timezone.now(), sim
    status.save(update_fields=["anchor_wall", "anchor_sim", *fields])
    return status.token
