"""Sums over a moving window of append-only rows (and over all of them), the settled part kept in the cache.

A market's history tables (spot settlements, finished jobs) grow by a few rows per tick and are
read as sums over "the last day" on every dashboard poll. Summing the window in the database is
O(rows in the window): hundreds of thousands on a busy site, 50-80 ms each time. But a row's
time is never before the market clock a reader could see when it was written (the clock writes
its rows in the transaction that moves the clock, from the time it starts at; a cancellation
writes at the clock's time under the market's row lock), the clock only moves forward, and the
summed columns never change once written. So the window is cut at multiples of ``width`` simulated
seconds into buckets, and a bucket that ended more than ``settled`` seconds before the clock holds
all the rows it ever will: its sums are computed once (all missing buckets in one grouped query)
and kept in the cache. Each read then sums the cached buckets and two small edge ranges (the
window's start, partway into a bucket, and the unsettled recent part), each read through the
time index. The settled buckets' total is kept too, under the range it covers, so a read
between two bucket boundaries gets one cache entry, not one per bucket.

Bucket membership is the database's own ``floor(time / width)`` in every query (the edges and the
buckets), so each row is counted in exactly one part, whatever the floating point does at a
boundary. The cache is an optimisation: a miss (or a cache outage) recomputes. A row written
later than ``settled`` seconds behind the clock, or a row deleted, would be missed or kept by a
cached bucket until its entry expires (``BUCKET_CACHE_S``); the tables summed here are written by
the clock at its own time and never deleted while their market exists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Aggregate, F, Q, QuerySet, Value
from django.db.models.functions import Floor

from marketplace.infra.resilience import cache_get_many, cache_set_many

BUCKET_CACHE_S = 600.0  # wall seconds a settled bucket's sums are kept

Sums = dict[tuple[Any, ...], list[float]]


@dataclass(frozen=True)
class Buckets:
    """How one history is cut: ``key`` names the rows and what is summed of them (it must change
    with the market's identity, e.g. its pk and creation time, and with the grouping), ``width``
    is the bucket width and ``settled`` how far behind the clock no row is written any more, both
    in simulated seconds."""

    key: str
    width: float = 900.0
    settled: float = 3600.0


def window_sums(*, rows: QuerySet[Any], time_field: str, group: Sequence[str], sums: Mapping[str, Aggregate],
                start: float, now: float, buckets: Buckets) -> Sums:
    """The sums of ``rows`` with ``time_field >= start``, grouped by the ``group`` fields (names of
    fields or of ``rows``' annotations): group tuple -> one float per aggregate of ``sums``, in its
    order (additive aggregates only: ``Sum``, ``Count``; None counts as 0). ``now`` is the market
    clock (simulated seconds); the buckets of ``buckets`` that lie wholly in the window and ended
    ``buckets.settled`` seconds before ``now`` come from the cache.
    """
    width = float(buckets.width)
    names = list(sums)
    base = rows.order_by().annotate(_bucket=Floor(F(time_field) / Value(width)))
    first = math.floor(start / width) + 1  # the bucket holding ``start`` is read as an edge
    last = math.floor((now - buckets.settled) / width)  # buckets [first, last) are settled
    out: Sums = {}
    if last <= first:
        _add(out, _grouped(base.filter(**{f"{time_field}__gte": start}), group, sums, names))
        return out
    # the two edges in one query: the window's start up to the first settled bucket, and the unsettled rest
    head = Q(**{f"{time_field}__gte": start, f"{time_field}__lt": first * width + width, "_bucket__lt": first})
    tail = Q(**{f"{time_field}__gte": (last - 1) * width, "_bucket__gte": last})
    _add(out, _grouped(base.filter(head | tail), group, sums, names))
    whole = f"window-sums:{buckets.key}:{width:g}:{first}-{last}"  # the settled buckets' total, as the last read left it
    keys = {k: f"window-sums:{buckets.key}:{width:g}:{k}" for k in range(first, last)}
    cached = cache_get_many([whole])
    if whole in cached:
        _add(out, dict(cached[whole]))
        return out
    cached = cache_get_many(list(keys.values()))
    missing = [k for k, key in keys.items() if key not in cached]
    if missing:
        lo, hi = min(missing), max(missing)
        fresh: dict[int, Sums] = {k: {} for k in range(lo, hi + 1)}
        part = base.filter(**{f"{time_field}__gte": (lo - 1) * width, f"{time_field}__lt": (hi + 2) * width,
                              "_bucket__gte": lo, "_bucket__lte": hi})
        for row in part.values("_bucket", *group).annotate(**sums).values_list("_bucket", *group, *names):
            k = int(row[0])
            fresh.setdefault(k, {})[tuple(row[1:1 + len(group)])] = [float(v or 0) for v in row[1 + len(group):]]
        cache_set_many({keys[k]: list(fresh[k].items()) for k in missing}, BUCKET_CACHE_S)
        for k in missing:
            cached[keys[k]] = list(fresh[k].items())
    settled: Sums = {}
    for key in keys.values():
        _add(settled, dict(cached[key]))
    cache_set_many({whole: list(settled.items())}, BUCKET_CACHE_S)
    _add(out, settled)
    return out


def _grouped(qs: QuerySet[Any], group: Sequence[str], sums: Mapping[str, Aggregate], names: list[str]) -> Sums:
    return {tuple(row[:len(group)]): [float(v or 0) for v in row[len(group):]]
            for row in qs.values(*group).annotate(**sums).values_list(*group, *names)}


def _add(total: Sums, part: Mapping[tuple[Any, ...], list[float]]) -> None:
    for g, values in part.items():
        into = total.get(g)
        if into is None:
            total[g] = list(values)
        else:
            for i, v in enumerate(values):
                into[i] += v


HISTORY_CACHE_S = 86400.0  # wall seconds a settled prefix's sums are kept


_PREFIXES: dict[str, tuple[float, list[tuple[tuple[Any, ...], list[float]]]]] = {}  # this process's copy of the last cut read per key
_PREFIXES_MAX = 256


def history_sums(*, rows: QuerySet[Any], time_field: str, group: Sequence[str], sums: Mapping[str, Aggregate],
                 now: float, buckets: Buckets, recent: Callable[[float], Sums] | None = None) -> Sums:
    """The sums of every row of ``rows`` (grouped and summed as :func:`window_sums`), the settled
    prefix (``time_field`` before the last multiple of ``buckets.width`` at least ``buckets.settled``
    seconds behind ``now``) kept in the cache as one running total that later reads extend by the
    rows between the old cut and the new one; this process keeps its last read of it too (a prefix up
    to a cut never changes), so until the cut moves no cache round trip is made. Rows whose time is NULL
    are read each time, with the unsettled rest: by ``recent(cut)`` when given (the same sums of the rows
    at or after ``cut`` or without a time, from a statement the caller built), else through the ORM."""
    width = float(buckets.width)
    names = list(sums)
    base = rows.order_by()
    cut = math.floor((now - buckets.settled) / width) * width
    key = f"history-sums:{buckets.key}:{width:g}"
    kept = _PREFIXES.get(key)
    if kept is None or kept[0] != cut:
        kept = cache_get_many([key]).get(key)
    prefix: Sums
    if kept is not None and kept[0] <= cut:
        since, prefix = kept[0], dict(kept[1])
        if since < cut:
            _add(prefix, _grouped(base.filter(**{f"{time_field}__gte": since, f"{time_field}__lt": cut}), group, sums, names))
    else:
        prefix = _grouped(base.filter(**{f"{time_field}__lt": cut}), group, sums, names)
    if kept is None or kept[0] != cut:
        cache_set_many({key: (cut, list(prefix.items()))}, HISTORY_CACHE_S)
    if len(_PREFIXES) >= _PREFIXES_MAX:
        _PREFIXES.clear()
    _PREFIXES[key] = (cut, [(g, list(v)) for g, v in prefix.items()])
    out: Sums = {g: list(v) for g, v in prefix.items()}
    if recent is not None:
        _add(out, recent(cut))
    else:
        _add(out, _grouped(base.filter(Q(**{f"{time_field}__gte": cut}) | Q(**{f"{time_field}__isnull": True})), group, sums, names))
    return out


def forget() -> None:
    """Drop this process's copies of the settled prefixes (tests: primary keys repeat across rolled-back tests)."""
    _PREFIXES.clear()
