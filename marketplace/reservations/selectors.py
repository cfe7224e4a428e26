"""Reads for ERA reservations (``selectors.py`` holds the rest): quotes, bookings, the
public price curve, revenue and welfare, and the cluster manager's current allocation."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
from django.db.models import F, QuerySet, Sum

from marketplace.market import hooks
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.reservations import adapters as ra
from marketplace.reservations.models import Reservation, ReservationQuote


def tenant_quotes(*, tenant: Tenant) -> QuerySet[ReservationQuote]:
    return ReservationQuote.objects.filter(tenant=tenant).select_related("resource_type").order_by("-id")


def tenant_reservations(*, tenant: Tenant) -> QuerySet[Reservation]:
    return Reservation.objects.filter(tenant=tenant).select_related("resource_type", "job").order_by("-id")


def quote_alternatives(*, quote: ReservationQuote, count: int = 3) -> list[tuple[float, float]]:
    """The next ``count`` cheapest offerings after the quoted one: (start s, price),
    cheapest first, earliest on ties, each starting at least a duration away from the
    quoted start and from each other (distinct blocks, as EC2 Capacity Blocks lists
    offerings, rather than the same block shifted by a slot)."""
    offers = sorted((round(float(p), 4), float(t)) for t, p in quote.offers if p is not None)  # money has 4 decimals
    taken = [float(quote.start)]
    out: list[tuple[float, float]] = []
    for p, t in offers:
        if len(out) == count:
            break
        if all(abs(t - x) >= quote.duration for x in taken):
            taken.append(t)
            out.append((t, p))
    return out


def window_unit_price(*, quote: ReservationQuote) -> float | None:
    """The unit price of the quote's slots now, money per slot-second: the market's price of one more
    unit of its type (paper 001, Alg. 1 line 7 with i = 1, ``adapters.unit_price_curve``) averaged over
    [start, start + duration); None when none of them has a unit left. The quote's own price over
    its work is at least this for an open quote: its W units are priced one after another, each
    no cheaper than the one before."""
    _, prices = ra.unit_price_curve(quote.market, [quote.resource_type], quote.start, quote.start + quote.duration)
    finite = prices[0][np.isfinite(prices[0])]
    return float(finite.mean()) if finite.size else None


@dataclass(frozen=True)
class PriceCurve:
    """The coming horizon of one resource type, slot by slot.

    Attributes:
        times: (H,) slot starts, simulated seconds.
        unit_price: (H,) price of the next unit of each slot (money per unit-slot;
            None where the slot has no unit left).
        slot_second_price: (H,) the same per slot-second (``unit_price / slot_seconds``), the
            market's one unit of price.
        promised: (H,) units promised to reservations and bookings.
        busy: (H,) units the auction's running tasks still hold (they free when the tasks end).
        queued: (H,) units the auction's queued work would use (its demand, which ERA prices see).
        capacity: units of the type.
        anchored: whether the prices are anchored to the spot market's realised rate (it has sold).
    """

    resource: str
    slot_seconds: float
    times: list[float]
    unit_price: list[float | None]
    slot_second_price: list[float | None]
    promised: list[int]
    busy: list[int]
    queued: list[float]
    capacity: int
    anchored: bool


def price_curve(*, market: Market, resource_type: ResourceType, slots: int | None = None) -> PriceCurve:
    """The next unit's price and the promised units per slot over the coming horizon
    (paper 001, Alg. 1 line 7 with i = 1), from the configured predictor."""
    s = ra.era_settings(market)
    state = ra.era_state(market, resource_type, s)
    mech, origin = state.mech, state.origin
    h = min(int(slots or s.horizon_slots), mech.horizon)
    prices = mech.unit_prices(1, 0, h)[:, 0]
    unit = [float(p) if np.isfinite(p) else None for p in prices.tolist()]
    return PriceCurve(
        resource=resource_type.name, slot_seconds=s.slot_seconds,
        times=[(origin + k) * s.slot_seconds for k in range(h)], unit_price=unit,
        slot_second_price=[None if p is None else p / s.slot_seconds for p in unit],
        promised=state.promised[:h].tolist(), busy=state.busy[:h].tolist(), queued=state.fill[:h].tolist(),
        capacity=int(resource_type.capacity), anchored=state.curve is not None,
    )


def reservation_totals(*, market: Market) -> dict[str, Any]:
    """Revenue, welfare (values of booked requests whose job finished) and requested value."""
    booked = Reservation.objects.filter(market=market)
    requested = ReservationQuote.objects.filter(market=market, value__isnull=False).aggregate(v=Sum("value"))["v"] or Decimal(0)
    revenue = booked.aggregate(p=Sum("price"))["p"] or Decimal(0)
    welfare = booked.filter(job__status=Job.Status.FINISHED).aggregate(v=Sum("value"))["v"] or Decimal(0)
    return {
        "reservations": booked.count(), "revenue": revenue, "welfare": welfare, "requested_value": requested,
        "welfare_share": float(welfare / requested) if requested > 0 else None,
        "late": booked.filter(job__sim_finish_time__gt=F("deadline")).count(),
    }


def revenue_series(*, market: Market) -> list[dict[str, float]]:
    """Cumulative revenue and welfare by reservation start (simulated seconds)."""
    rows = Reservation.objects.filter(market=market).order_by("start", "id").values_list("start", "price", "value", "job__status")
    out, revenue, welfare = [], 0.0, 0.0
    for start, price, value, status in rows:
        revenue += float(price)
        if status == Job.Status.FINISHED and value is not None:
            welfare += float(value)
        out.append({"time": float(start), "revenue": revenue, "welfare": welfare})
    return out


def cluster_allocation(*, market: Market) -> dict[str, Any]:
    """ERA's getCurrentAllocation (paper 001, Sec. 2.3.2): which jobs hold how many units
    now, plus empty allocations for booked jobs inside their window that hold none (a
    cluster manager may start them early, as Rayon did). ``etag`` digests the
    allocation (not the clock), so a poller asks cheaply with If-None-Match."""
    now = market.sim_time
    running: dict[int, dict[str, int]] = {}
    for job_id, name, units in JobWork.objects.filter(job__market=market, job__status__in=Job.ACTIVE, running__gt=0).values_list(
        "job_id", "resource_type__name", "running"
    ):
        running.setdefault(job_id, {})[name] = units
    booked = {
        r.job_id: r for r in Reservation.objects.filter(market=market, job__status__in=Job.ACTIVE, arrival__lte=now, deadline__gt=now)
        .select_related("resource_type")
    }
    rows = []
    ids = sorted(set(running) | set(booked))
    outside = hooks.executions(market, ids)  # what a real cluster runs of each (Slurm's job ids and states)
    for job_id in ids:
        r = booked.get(job_id)
        rows.append({
            "job": job_id, "units": running.get(job_id, {}),
            "executions": [{k: t[k] for k in ("id", "executor", "where", "state", "executor_state")}
                           for t in outside.get(job_id, []) if t["state"] in ("submitted", "running")],
            "reservation": None if r is None else {
                "resource_type": r.resource_type.name, "units": r.units, "start": r.start, "end": r.end,
                "window": [r.arrival, r.deadline],
            },
        })
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:32]
    return {"sim_time": now, "etag": f'"{digest}"', "jobs": rows}
