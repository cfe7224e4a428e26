"""The market's price level in one unit, money per slot-second (docs/economy.md).

Reads only. What auction jobs paid when they left the market (``SpotSettlement``, written by
``services.rates``) is the market's reference price, read robustly ("A price nobody moves alone"):

* :func:`reference_rates` -- each type's reference rate: one vote per tenant that bought slots of it in
  contention over the window, one for ``MARKET_REFERENCE_RATE``, the median of the votes, never
  below the type's reserve price (``scheduler.era.spot.robust_rate``);
* :func:`price_level` -- the same over every type: the rate a new tenant's money is sized by;
* :func:`recent_settlements` -- the settlements of the recent window (``MARKET_RATE_WINDOW_S``), and
  :func:`settlement_sums` -- their sums by type, tenant and level of demand, from which
  ``reservations.adapters.spot_curve`` fits the rate by level of demand that ERA's prices are anchored to;
* :func:`rate_series`, :func:`realised_rates` -- the published, pooled rows (``RateSample``: no row is one
  tenant's payment) and each type's realised rate over the window from them (charged / slot-seconds);
* :func:`bidders_rate` -- what the active bidders' budgets offer per slot-second of their
  remaining work now (the newest Plan's sub-budgets on a type over the work left on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, F, IntegerField, QuerySet, Sum, Value, When
from django.db.models.functions import Cast, Floor, Greatest, Least

from marketplace.infra import rows
from marketplace.infra.resilience import cache_get, cache_set
from marketplace.infra.windows import Buckets, window_sums
from marketplace.market import adapters
from marketplace.market.models.allocation import RateSample, SpotSettlement
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from scheduler.era.spot import LEVEL_BINS, robust_rate

STATE_MEMO_S = 30.0  # wall seconds the window's sums are kept for one state of the market
_KEPT: dict[int, tuple[str, list[Any]]] = {}  # market id -> (memo key, the window's sums): settlement_sums' last answer here
DEFAULT_WINDOW_S = 86400.0  # a day of simulated time: ERA's demand cycle (paper 001, Sec. 5.3)


def reference_rate() -> float:
    """``MARKET_REFERENCE_RATE`` (money per slot-second, default 1.0): the price level before any
    sale. The default is what paper 000's bids (budgets U[50, 200]) pay on FB-2009's jobs: 0.97
    over the first half hour of the trace (docs/economy.md)."""
    return float(getattr(settings, "MARKET_REFERENCE_RATE", 1.0))


def window_s() -> float:
    """``MARKET_RATE_WINDOW_S``: how far back (simulated seconds) the realised rate looks."""
    return float(getattr(settings, "MARKET_RATE_WINDOW_S", DEFAULT_WINDOW_S))


def contention_level() -> float:
    """``MARKET_CONTENTION_LEVEL`` (default 0.9): the busy share of a type's slots from which a sale
    counts for the reference rate. Below it every bid is served whatever it offers (paper 000: the
    auction rations only what is short), so what it paid says nothing about the slots' price."""
    return float(getattr(settings, "MARKET_CONTENTION_LEVEL", 0.9))


def rate_series(*, market: Market, resource: str | None = None) -> QuerySet[RateSample]:
    """The published realised-rate rows, oldest first (``resource``: one type's by name): pooled from
    at least ``MARKET_RATE_MIN_TENANTS`` tenants each (rows written before pooling are not served)."""
    from marketplace.market.services.rates import min_tenants

    qs = (RateSample.objects.filter(market=market, tenants__gte=min_tenants()).select_related("resource_type")
          .order_by("sim_time", "id"))
    return qs.filter(resource_type__name=resource) if resource else qs


def recent_settlements(*, market: Market) -> QuerySet[SpotSettlement]:
    """The settlements of the recent window: the last ``MARKET_RATE_WINDOW_S`` simulated seconds."""
    return SpotSettlement.objects.filter(market=market, sim_time__gte=market.sim_time - window_s())


def realised_rates(*, market: Market, types: Sequence[ResourceType]) -> dict[str, float | None]:
    """Type name -> charged / slot-seconds of the published rows in the window (None: nothing
    published on it yet)."""
    from marketplace.market.services.rates import min_tenants

    def col(name: str) -> str:
        return rows.column(RateSample, name)

    with connection.cursor() as cursor:  # rate_series' rows in the window, summed per type (a statement built here, not compiled)
        cursor.execute(f"SELECT {col('resource_type')}, SUM({col('charged')}), SUM({col('slot_seconds')}) FROM {rows.table(RateSample)} "
                       f"WHERE {col('market')} = %s AND {col('tenants')} >= %s AND {col('sim_time')} >= %s GROUP BY {col('resource_type')}",
                       [market.pk, min_tenants(), market.sim_time - window_s()])
        sums = {type_id: (c or 0.0, w or 0.0) for type_id, c, w in cursor.fetchall()}
    out: dict[str, float | None] = {}
    for t in types:
        c, w = sums.get(t.pk, (0.0, 0.0))
        out[t.name] = float(c) / float(w) if w > 0 else None
    return out


def _votes(rows: Sequence[tuple[int | None, float, float]]) -> tuple[list[float], list[float], list[int]]:
    """(charged, slot_seconds, voter) columns of (tenant_id, charged, slot_seconds) rows; an unknown
    tenant (rows from before settlements named one) is one voter, -1."""
    return [c for _, c, _ in rows], [w for _, _, w in rows], [t if t is not None else -1 for t, _, _ in rows]


_RATES: dict[tuple[Any, ...], float] = {}  # (rows, prior) -> robust_rate: the same votes on every poll between two ticks
_RATES_MAX = 256


def reference_of(rows: Sequence[tuple[int | None, float, float]], *, floor: float) -> float:
    """The reference rule on settlements in contention, (tenant_id, charged, slot_seconds) rows:
    ``max(floor, median(votes))`` with one vote per tenant and one for :func:`reference_rate`
    (``scheduler.era.spot.robust_rate``, a pure function of the votes: this process keeps its last
    answers, which the market state asks again with the same votes until a settlement is added),
    money per slot-second."""
    prior = reference_rate()
    key = (tuple(rows), prior)
    rate = _RATES.get(key)
    if rate is None:
        rate = robust_rate(*_votes(rows), prior=prior)
        if len(_RATES) >= _RATES_MAX:
            _RATES.clear()
        _RATES[key] = rate
    return max(float(floor), rate)


@dataclass(frozen=True)
class SettledSum:
    """The window's settlements of one type and tenant at one level of demand, summed: ``level_bin``
    is the spot fit's bin of the busy share, ``min(floor(clip(u, 0, 1) x LEVEL_BINS), LEVEL_BINS - 1)``;
    ``contended`` whether the share was at least :func:`contention_level`; ``sold`` whether the rows
    used slot-seconds (> 0). ``charged`` money, ``slot_seconds``, ``rows`` how many settlements."""

    resource_type_id: int
    tenant_id: int | None
    level_bin: int
    contended: bool
    sold: bool
    charged: float
    slot_seconds: float
    rows: int


def settlement_sums(*, market: Market) -> list[SettledSum]:
    """The recent window's settlements (:func:`recent_settlements`), summed by type, tenant, level
    bin, contention and whether they sold anything: every rule that reads the window (the reference
    rates, the price level, ERA's spot curve) needs only these sums, and a busy window holds hundreds
    of thousands of settlements. The window's settled part is summed once per quarter hour of the
    market clock and kept in the cache (``infra.windows``: settlements are written by the clock at
    its own time and never change)."""
    level = contention_level()
    created = market.created_at.timestamp() if market.created_at else 0.0
    # the rules read them several times for one answer (the dashboard: the level, each type's curve and
    # reference): kept for the settlements as they stand, named by the clock's time and how many rows
    # lie at or after it. Settlements are only added, each at the clock's time of its writer (a tick at
    # the time it moves the clock to, a cancellation at the clock's time under the market's row lock),
    # so those two change with every one added and nothing else (a bid, a clearing) moves them. The count
    # is read before the sums: a row committed in between is in the sums kept under the older count,
    # never missing from the sums kept under a count that includes it.
    memo = f"settlement-sums:{market.pk}:{created:.6f}:{level:g}:{market.sim_time!r}:{_settled_since(market)}"
    kept = _KEPT.get(market.pk)  # this process's last sums (the memo names their content): no cache round trip
    if kept is not None and kept[0] == memo:
        return list(kept[1])
    kept = cache_get(memo)
    if kept is not None:
        _KEPT[market.pk] = (memo, list(kept))
        return list(kept)
    level_bin = Cast(Least(Floor(Greatest(Least(F("utilisation"), Value(1.0)), Value(0.0)) * LEVEL_BINS), Value(LEVEL_BINS - 1)),
                     IntegerField())
    rows = SpotSettlement.objects.filter(market=market).annotate(
        level_bin=level_bin,
        contended=Case(When(utilisation__gte=level, then=Value(1)), default=Value(0), output_field=IntegerField()),
        sold=Case(When(slot_seconds__gt=0, then=Value(1)), default=Value(0), output_field=IntegerField()))
    sums = window_sums(rows=rows, time_field="sim_time", group=("resource_type_id", "tenant_id", "level_bin", "contended", "sold"),
                       sums={"c": Sum("charged"), "w": Sum("slot_seconds"), "n": Count("id")},
                       start=market.sim_time - window_s(), now=market.sim_time,
                       buckets=Buckets(key=f"settlements:{market.pk}:{created:.6f}:{level:g}:{LEVEL_BINS}"))
    out = [SettledSum(int(t), tenant, int(b), bool(c), bool(sold), v[0], v[1], int(v[2])) for (t, tenant, b, c, sold), v in sums.items()]
    cache_set(memo, out, STATE_MEMO_S)
    _KEPT[market.pk] = (memo, list(out))
    return out


def forget() -> None:
    """Drop this process's last window sums and reference rates (tests that rewrite settlements by hand)."""
    _KEPT.clear()
    _RATES.clear()


def _settled_since(market: Market) -> int:
    """How many of the market's settlements lie at or after its clock's time (one range of the
    ``(market, sim_time)`` index; a statement Django need not compile: read on every market state)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {rows.table(SpotSettlement)} WHERE {rows.column(SpotSettlement, 'market')} = %s "
                       f"AND {rows.column(SpotSettlement, 'sim_time')} >= %s", [market.pk, market.sim_time])
        return int(cursor.fetchone()[0])


def contended_settlements(*, market: Market, sums: Sequence[SettledSum] | None = None) -> list[tuple[int, int | None, float, float]]:
    """(resource_type_id, tenant_id, charged, slot_seconds) of the window's settlements made at a level
    of demand of at least :func:`contention_level`, summed per type and tenant (the rules vote per
    tenant: its charges over its slot-seconds, so the sums are all they read): the votes of
    :func:`reference_rates` and :func:`price_level`. ``sums``: :func:`settlement_sums` when the
    caller has read them already."""
    by: dict[tuple[int, int | None], list[float]] = {}
    for r in settlement_sums(market=market) if sums is None else sums:
        if r.contended:
            into = by.setdefault((r.resource_type_id, r.tenant_id), [0.0, 0.0])
            into[0] += r.charged
            into[1] += r.slot_seconds
    return [(t, tenant, c, w) for (t, tenant), (c, w) in by.items()]


def reference_rates(*, market: Market, types: Sequence[ResourceType],
                    contended: Sequence[tuple[int, int | None, float, float]] | None = None) -> dict[str, float]:
    """Type name -> the type's reference rate, money per slot-second (docs/economy.md, "A price nobody
    moves alone"): ``max(reserve, median(votes))`` with one vote per tenant that bought slots of the
    type at a level of demand of at least :func:`contention_level` in the window (its charges over
    its slot-seconds) and one for :func:`reference_rate`. One tenant, whatever it buys at whatever
    price, moves it only to the other votes next to their median (``scheduler.era.spot.robust_rate``).
    ``contended``: :func:`contended_settlements` when the caller has read them already."""
    rows = contended_settlements(market=market) if contended is None else contended
    by_type: dict[int, list[tuple[int | None, float, float]]] = {t.pk: [] for t in types}
    for type_id, tenant, c, w in rows:
        if type_id in by_type:
            by_type[type_id].append((tenant, c, w))
    return {t.name: reference_of(by_type[t.pk], floor=float(t.reserve_price)) for t in types}


def reserve_floor(types: Sequence[ResourceType]) -> float:
    """The reserve prices' capacity-weighted mean, money per slot-second: the least the price level can be."""
    slots = sum(t.capacity for t in types)
    return sum(float(t.reserve_price) * t.capacity for t in types) / slots if slots else 0.0


def price_level(*, market: Market, contended: Sequence[tuple[int, int | None, float, float]] | None = None,
                types: Sequence[ResourceType] | None = None) -> float:
    """The market's price level, money per slot-second: :func:`reference_rates`' rule over every type
    at once (one vote per tenant over its contended slot-seconds of all types), never below the
    reserve prices' capacity-weighted mean; :func:`reference_rate` before anything was sold in contention.
    ``contended``: :func:`contended_settlements` when the caller has read them already; ``types``: all of
    the market's resource types (``adapters.resource_types``) when the caller has read them already."""
    rows = contended_settlements(market=market) if contended is None else contended
    every = adapters.resource_types(market) if types is None else types
    return reference_of([(tenant, c, w) for _, tenant, c, w in rows], floor=reserve_floor(every))


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


def rate_points(*, market: Market, span_s: float = 900.0, max_points: int = 500) -> list[dict[str, object]]:
    """The spot market's realised rate over time, per type: at each sample, charged / slot-seconds of
    the samples in the ``span_s`` simulated seconds up to it (a moving window smooths single jobs);
    at most ``max_points`` per type, evenly spaced. Rows: sim_time, resource, rate."""
    rows = list(rate_series(market=market).order_by("resource_type__stage", "resource_type_id", "sim_time", "id")
                .values_list("resource_type__name", "sim_time", "charged", "slot_seconds"))
    out: list[dict[str, object]] = []
    by_type: dict[str, list[tuple[float, float, float]]] = {}
    for name, t, c, w in rows:
        by_type.setdefault(name, []).append((float(t), float(c), float(w)))
    for name, samples in by_type.items():
        t, c, w = (np.array(col) for col in zip(*samples, strict=True))
        cc, ww = np.concatenate([[0.0], np.cumsum(c)]), np.concatenate([[0.0], np.cumsum(w)])
        first = np.searchsorted(t, t - span_s, side="right")
        paid, used = cc[1:] - cc[first], ww[1:] - ww[first]
        keep = np.unique(np.round(np.linspace(0, t.size - 1, min(max_points, t.size))).astype(np.int64))
        out += [{"sim_time": float(t[k]), "resource": name, "rate": float(paid[k] / used[k])} for k in keep.tolist() if used[k] > 0]
    return out


def one_unit_prices(*, market: Market, types: Sequence[ResourceType], ahead_s: float = 7200.0,
                    since_s: float = 86400.0) -> dict[str, Any]:
    """Every price of the market in money per slot-second, for one chart (docs/economy.md): the spot
    market's realised rate over time (:func:`rate_points`), the price curve quotes price from over
    the next ``ahead_s`` seconds (``hooks.price_curve``: one more unit of each type, per slot), and
    what the parts' tenants paid per slot-second of their work in the last ``since_s`` seconds
    (``hooks.offered_prices``: reservations, deadline bookings, pool jobs), and each type's reference
    rate and reserve price."""
    from marketplace.market import hooks

    now = market.sim_time
    curve: list[dict[str, object]] = []
    answer = hooks.price_curve(market, types, now, now + ahead_s)
    if answer is not None:
        times, prices = answer
        curve = [{"sim_time": float(t), "resource": types[j].name, "price": float(prices[j, k])}
                 for j in range(len(types)) for k, t in enumerate(np.asarray(times).tolist()) if np.isfinite(prices[j, k])]
    offered = [{"sim_time": at, "resource": types[j].name, "price": price, "source": label}
               for label, j, at, price in hooks.offered_prices(market, types, now - since_s) if j < len(types)]
    return {"spot": rate_points(market=market), "curve": curve, "offered": offered,
            "reference": reference_rates(market=market, types=types), "reserve": {t.name: float(t.reserve_price) for t in types}}


DAY_S = 86400.0


def fair_share_deposit(*, market: Market, queue_id: int, seconds: float = DAY_S) -> Decimal:
    """What ``seconds`` (a day) of a leaf queue's fair share costs at the market's price level:
    level (money per slot-second) x the leaf's fair fraction of the cluster (paper 002, the
    weights down the tree) x every type's slots x seconds, in whole money units. A tenant's
    deposit of this much buys about a day of its share (docs/economy.md)."""
    tree_map = adapters.queue_tree(market)
    fraction = float(tree_map.tree.leaf_fraction()[tree_map.leaf_position(queue_id)])
    slots = sum(t.capacity for t in adapters.resource_types(market))
    return Decimal(round(price_level(market=market) * fraction * slots * seconds))
