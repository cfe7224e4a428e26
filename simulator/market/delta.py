"""The market engine's state in parts, so that a store writes only what changed (docs/engine.md).

``simulator.market.state.dump`` gives the whole state as one JSON document: every job's counters and
books, every tick. Here the same state is cut in three:

* the **header**: everything that does not grow with the jobs (configuration, clock, events,
  fair-share allocators and ledger, bookings, the dispatcher's generator), JSON;
* one **record** per job (its cluster counters and spec, its bid, payment rule, arrival), JSON,
  written only when it changed: a job's *mark* (:func:`marks_of`) holds the fields its record is
  made of, and a record is written again only when its mark differs from the one stored;
* the **columns**: the numbers every clearing or grant changes for every job (the Plan's shares
  and sub-budgets, the share integrals, the dispatcher's credits, the leaves' arrival order),
  packed as float64 arrays in one byte string: O(jobs) bytes, but no per-job JSON.

:func:`join` puts them back into exactly the document ``state.dump`` gives, so an engine restored
from parts is the engine restored from the whole state (``MarketEngine.from_state``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simulator.cluster import state as cluster_state
from simulator.market import state as engine_state

Mark = tuple[Any, ...]
PARTS_FORMAT = 1


@dataclass(frozen=True)
class Parts:
    """One store's parts (module docstring).

    Attributes:
        header: JSON document; ``header["columns"]`` lays out ``columns``.
        columns: the packed float64 arrays.
        records: job id -> its record (JSON), for the jobs whose record changed (every job when
            no marks were given).
        gone: job ids whose stored record is no longer the engine's (departed, cancelled).
        marks: job id -> mark, of every job: what the store now holds.
    """

    header: dict[str, Any]
    columns: bytes
    records: dict[int, list[Any]]
    gone: list[int]
    marks: dict[int, Mark]


def marks_of(engine: engine_state.Saved) -> dict[int, Mark]:
    """Each job's mark: the objects and values its record is made of (compared with ``==``: the
    counters by value, the job and books objects by identity)."""
    jobs, books = engine.cluster._jobs, engine._books
    out: dict[int, Mark] = {}
    for job_id, js in jobs.items():  # one flat tuple a job (its counters unpacked): every store builds 5,000 of them at 5,000 jobs
        b = books.get(job_id)
        out[job_id] = (js, js.spec, *js.pending, -1, *js.running, -1, *js.done, js.start_time, js.active, js.seq,
                       *((None,) if b is None else (b, b.bid, b.rule, b.arrival, b.accepted)))
    for job_id, b in books.items():
        if job_id not in jobs:
            out[job_id] = (None, b, b.bid, b.rule, b.arrival, b.accepted)
    return out


def _record(engine: engine_state.Saved, job_id: int) -> list[Any]:
    """A job's record: [its cluster counters (``JobState.to_state``) or None, its books or None]."""
    js, b = engine.cluster._jobs.get(job_id), engine._books.get(job_id)
    books = None if b is None else [
        b.bid.budget, list(b.bid.weights), b.bid.utility, b.bid.min_utility, [b.rule.kind, b.rule.amount, b.rule.min_utility],
        b.arrival, b.accepted,
    ]
    return [None if js is None else js.to_state(), books]


def split(engine: engine_state.Saved, stored: Mapping[int, Mark] | None) -> Parts:
    """The engine's parts; ``records`` holds only the jobs whose mark differs from ``stored``
    (None: nothing is stored, every job)."""
    c = engine.cluster
    cluster = cluster_state.dump(c, jobs=False, placement=False)  # the placement goes in columns
    dispatcher = c.placement.dispatcher.to_state(counters=False)
    leaves = c.placement.leaves
    arrays: dict[str, NDArray[np.float64]] = {
        "books": _books_array(engine),
        "cluster_jobs": np.array(list(c._jobs), dtype=np.float64),
        "leaf_jobs": np.array([j for leaf in leaves for j in leaf], dtype=np.float64),
        "placement_shares": c.placement.share_array(),
        "counters": c.placement.dispatcher.counter_array(),
    }
    full = engine_state.dump_header(engine)
    full["cluster"] = cluster
    header = {
        "format": PARTS_FORMAT, "engine": full, "dispatcher": dispatcher, "leaf_sizes": [len(leaf) for leaf in leaves],
        "columns": [[name, list(a.shape)] for name, a in arrays.items()],
    }
    columns = b"".join(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in arrays.values())
    marks = marks_of(engine)
    if stored is None:
        changed = list(marks)
        gone: list[int] = []
    else:
        changed = [job for job, mark in marks.items() if stored.get(job) != mark]
        gone = [job for job in stored if job not in marks]
    return Parts(header, columns, {job: _record(engine, job) for job in changed}, gone, marks)


def _books_array(engine: engine_state.Saved) -> NDArray[np.float64]:
    """(jobs, 4 + 3m) rows [job id, has sub-budget, sub-budget (m, NaN if none), has share, share (m),
    share integral (m), integral's mark], in the books' order."""
    m = engine.cluster.m
    if not engine._books:
        return np.zeros((0, 3 + 3 * m + 1))
    shares, values = engine._shares, engine._books.values()
    rows = np.fromiter((b.row for b in values), dtype=np.intp, count=len(values))
    sub_matrix, has_sub = shares.subs(rows)
    return np.column_stack([
        np.fromiter(engine._books, dtype=np.float64, count=len(values)), has_sub.astype(np.float64), sub_matrix,
        shares._has[rows].astype(np.float64), shares._share[rows], shares._area[rows], shares._mark[rows],
    ])


def _unpack(header: Mapping[str, Any], columns: bytes) -> dict[str, NDArray[np.float64]]:
    """The arrays ``header["columns"]`` lays out in ``columns``.

    Raises:
        ValueError: the bytes do not match the layout.
    """
    flat = np.frombuffer(columns, dtype=np.float64) if len(columns) % 8 == 0 else np.zeros(0)
    sizes = [int(np.prod(shape)) for _, shape in header["columns"]]
    if sum(sizes) != flat.size or len(columns) != 8 * flat.size:
        raise ValueError(f"engine columns: {len(columns)} bytes stored, the layout names {sum(sizes)} numbers")
    out, at = {}, 0
    for (name, shape), size in zip(header["columns"], sizes, strict=True):
        out[name] = flat[at:at + size].reshape(shape)
        at += size
    return out


def join(header: Mapping[str, Any], columns: bytes, records: Mapping[int, list[Any]]) -> dict[str, Any]:
    """The whole state (``simulator.market.state.dump``'s document) of stored parts.

    Raises:
        ValueError: an unknown format, columns that do not match their layout, or a job the
            columns name without a record.
    """
    if header.get("format") != PARTS_FORMAT:
        raise ValueError(f"unknown engine parts format {header.get('format')!r}")
    arrays = _unpack(header, columns)
    state = dict(header["engine"])
    cluster = dict(state["cluster"])
    try:
        m = len(cluster["capacity"])
        books = []
        for row in arrays["books"].tolist():
            job_id = int(row[0])
            budget, weights, utility, min_utility, rule, arrival, accepted = records[job_id][1]
            sub = row[2:2 + m] if row[1] else None
            share = row[3 + m:3 + 2 * m] if row[2 + m] else None
            books.append([job_id, budget, weights, utility, min_utility, rule, arrival, sub, share,
                          row[3 + 2 * m:3 + 3 * m], row[3 + 3 * m], accepted])
        cluster["jobs"] = [records[int(j)][0] for j in arrays["cluster_jobs"].tolist()]
    except KeyError as exc:
        raise ValueError(f"engine parts: no record of job {exc.args[0]}") from None
    ids = [int(j) for j in arrays["leaf_jobs"].tolist()]
    leaf_jobs, at = [], 0
    for size in header["leaf_sizes"]:
        leaf_jobs.append(ids[at:at + size])
        at += size
    dispatcher = dict(header["dispatcher"])
    dispatcher["counters"] = [[int(j), int(r), credit, int(served)] for j, r, credit, served in arrays["counters"].tolist()]
    cluster["placement"] = {
        "leaf_jobs": leaf_jobs,
        "shares": [[int(row[0]), row[1:]] for row in arrays["placement_shares"].tolist()],
        "dispatcher": dispatcher,
    }
    state["cluster"] = cluster
    state["books"] = books
    return state
