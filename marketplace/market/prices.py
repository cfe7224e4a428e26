"""The market's price level in one unit, money per slot-second (issue 22; docs/economy.md).

Reads only. The spot auction's realised rate (``RateSample``, written by ``services.rates``
when auction jobs leave the market) is the market's reference price:

* :func:`rate_series` -- the samples, for the API and the charts;
* :func:`spot_curve` -- the realised rate of one resource type by level of demand over the
  recent window (``scheduler.era.spot.SpotCurve``), which ERA's prices are anchored to;
* :func:`realised_rates` -- each type's realised rate over the window (charged / slot-seconds);
* :func:`price_level` -- the rate a new tenant's money is sized by: the realised rate over
  every type, or ``MARKET_REFERENCE_RATE`` before the market has sold anything;
* :func:`bidders_rate` -- what the active bidders' budgets offer per slot-second of their
  remaining work now (the newest Plan's sub-budgets on a type over the work left on it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.conf import settings
from django.db.models import QuerySet, Sum

from marketplace.market import adapters
from marketplace.market.models.allocation import RateSample
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from scheduler.era.spot import SpotCurve

DEFAULT_WINDOW_S = 86400.0  # a day of simulated time: ERA's demand cycle (paper 001, Sec. 5.3)


def reference_rate() -> float:
    """``MARKET_REFERENCE_RATE`` (money per slot-second, default 1.0): the price level before any
    sale. The default is what paper 000's bids (budgets U[50, 200]) pay on FB-2009's jobs: 0.97
    over the first half hour of the trace (docs/economy.md)."""
    return float(getattr(settings, "MARKET_REFERENCE_RATE", 1.0))


def window_s() -> float:
    """``MARKET_RATE_WINDOW_S``: how far back (simulated seconds) the realised rate looks."""
    return float(getattr(settings, "MARKET_RATE_WINDOW_S", DEFAULT_WINDOW_S))


def rate_series(*, market: Market, resource: str | None = None) -> QuerySet[RateSample]:
    """The realised-rate samples, oldest first (``resource``: one type's by name)."""
    qs = RateSample.objects.filter(market=market).select_related("resource_type").order_by("sim_time", "id")
    return qs.filter(resource_type__name=resource) if resource else qs


def _recent(market: Market) -> QuerySet[RateSample]:
    return RateSample.objects.filter(market=market, sim_time__gte=market.sim_time - window_s())


def spot_curve(*, market: Market, resource_type: ResourceType) -> SpotCurve | None:
    """The type's realised rate by level of demand over the window (None: nothing sold yet)."""
    rows = list(_recent(market).filter(resource_type=resource_type).values_list("utilisation", "charged", "slot_seconds"))
    if not rows:
        return None
    u, c, w = (np.array(col, dtype=np.float64) for col in zip(*rows, strict=True))
    return SpotCurve.fit(u, c, w)


def realised_rates(*, market: Market, types: Sequence[ResourceType]) -> dict[str, float | None]:
    """Type name -> charged / slot-seconds over the window (None: nothing sold on it yet)."""
    sums = {r["resource_type_id"]: (r["c"] or 0.0, r["w"] or 0.0)
            for r in _recent(market).values("resource_type_id").annotate(c=Sum("charged"), w=Sum("slot_seconds"))}
    out: dict[str, float | None] = {}
    for t in types:
        c, w = sums.get(t.pk, (0.0, 0.0))
        out[t.name] = float(c) / float(w) if w > 0 else None
    return out


def price_level(*, market: Market) -> float:
    """The market's price level, money per slot-second: the realised rate over every type in the
    window, or :func:`reference_rate` before anything was sold."""
    sums = _recent(market).aggregate(c=Sum("charged"), w=Sum("slot_seconds"))
    w = float(sums["w"] or 0.0)
    return float(sums["c"] or 0.0) / w if w > 0 else reference_rate()


def bidders_rate(*, market: Market, types: Sequence[ResourceType]) -> dict[str, float | None]:
    """Type name -> what the newest Plan's bidders offer per slot-second of their remaining work
    on it: the sum of their sub-budgets on the type (paper 000, Sec. 3) over the slot-seconds of
    their pending and running tasks of it (None: no bid on the type)."""
    latest = adapters.latest_plan(market.pk)
    out: dict[str, float | None] = {t.name: None for t in types}
    if latest is None or latest[1].n == 0:
        return out
    plan = latest[1]
    spent = np.asarray(plan.sub_budgets, dtype=np.float64).sum(axis=0)
    column = {t.pk: j for j, t in enumerate(types)}
    remaining = np.zeros(len(types))
    rows = JobWork.objects.filter(job_id__in=plan.job_ids.tolist(), job__status__in=Job.ACTIVE).values_list(
        "resource_type_id", "pending", "running", "task_duration")
    for type_id, pending, running, duration in rows:
        if type_id in column:
            remaining[column[type_id]] += (pending + running) * duration
    for j, t in enumerate(types):
        if j < spent.shape[0] and remaining[j] > 0 and spent[j] > 0:
            out[t.name] = float(spent[j] / remaining[j])
    return out
