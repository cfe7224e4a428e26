"""The market's change signal and its engine's storage.

* :func:`market_changed` -- every writer that changes what a clearing sees
  (a bid, a cancellation, a departure, a parameter, a capacity, a queue) calls
  it inside its transaction: the state version rises and, after commit, the
  clearing task is enqueued. Services never import ``marketplace.tasks``
  (tasks import services); the task is looked up by name in the Celery app.
* :func:`engine_load` / :func:`engine_store` -- the live market's
  ``simulator.market.engine.MarketEngine``, stored in parts (``simulator.market.delta``):
  the header on the market row, one ``EngineJob`` row a job, the packed ``EngineColumns``.
  A store writes the header, the columns and the records of the jobs that changed since
  the version it started from (docs/engine.md: the crash-consistency
  rule). A process keeps the engine it last stored or read in memory, keyed by the row's
  ``engine_version``, so a tick or a clearing that follows its own last write
  does not read the state again.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F

from marketplace.infra import instances, rows
from marketplace.infra.batch import Batch
from marketplace.infra.resilience import cache_add, cache_delete, publish_task
from marketplace.market import adapters, structure
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import EngineColumns, EngineJob, Market
from marketplace.market.models.queues import ResourceType
from simulator.market import delta
from simulator.market.engine import MarketEngine

log = logging.getLogger(__name__)

CLEAR_TASK = "marketplace.tasks.clear_market_task"


def market_changed(*, market: Market) -> None:
    """Bump ``market.state_version`` and enqueue a clearing after commit.

    The caller holds the market row lock (``select_for_update``) in an open
    transaction; the version is saved here.
    """
    market.state_version += 1
    rows.update_rows(Market, ("state_version",), ("id",), [(market.state_version, market.pk)])
    enqueue_clearing(market_id=market.pk)


def part_in_use(*, market: Market, name: str) -> None:
    """Record that the part ``name`` holds rows of the market from now on (ERA's first reservation, Cura's
    first pool job): the clock and the clearing call its hooks from then on (``hooks.MarketPart.idle_until_used``).
    The caller holds the market row lock (so ``market`` is the row as locked) and writes the rows in the
    same transaction."""
    if name not in market.parts_in_use:
        market.parts_in_use = [*market.parts_in_use, name]
        rows.update_rows(Market, ("parts_in_use",), ("id",), [(market.parts_in_use, market.pk)])


def market_lock_and_bump(*, market_id: int) -> Market:
    """The first statement of a bid or a cancellation: lock the market row and raise its
    ``state_version`` in one ``UPDATE ... RETURNING`` (``infra.instances.increment_row``). Returns the
    market as locked (``engine_state`` deferred). The caller enqueues the clearing
    (:func:`enqueue_clearing`) after registering its own after-commit work, as
    :func:`market_changed` does.

    The same as ``get_row(..., for_update=True)`` followed by :func:`market_changed`'s
    UPDATE, one round trip shorter, and that round trip is made while holding the row every
    other writer waits for. Lock order: the market first, as every writer takes it.

    Raises:
        Market.DoesNotExist: no such market.
    """
    market: Market = instances.increment_row(Market, market_id, counter="state_version", exclude=("engine_state",))
    return market


_deferred: contextvars.ContextVar[bool] = contextvars.ContextVar("clearings_deferred", default=False)


@contextlib.contextmanager
def clearings_deferred() -> Iterator[None]:
    """Within the block, market changes enqueue no clearing: the caller's next clock
    tick clears them (``cluster_advance`` clears a market whose ``state_version`` is
    ahead of its ``cleared_version`` before it hands out any slot). For batch drivers
    that tick after every change, such as ``replay_trace --drain``: one transaction
    per event instead of two."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)


def enqueue_clearing(*, market_id: int) -> None:
    """Enqueue ``clear_market_task`` once the current transaction commits (at
    once outside one). Eager Celery runs it right then, in this process. Nothing
    inside :func:`clearings_deferred`.

    A broker outage does not fail the write: the publish is logged and dropped
    (``infra.resilience.publish_task``), and the sweeper (``services.sweeper``) clears
    the market within ``MARKET_STALENESS_BOUND_S``."""
    if _deferred.get():
        return
    transaction.on_commit(lambda: clearing_request(market_id=market_id))


PENDING_S = 3.0  # a request mark outlives a lost task by at most this (the sweeper's bound covers the rest)


def _pending_key(market_id: int) -> str:
    return f"clearing-pending:{market_id}"


def clearing_request(*, market_id: int) -> bool:
    """Publish a clearing of the market unless one is already waiting to start: True if published.

    Every committed change asks for a clearing, dozens a second under load, while one clearing
    covers every change committed before it reads the state. So a request first sets a mark in
    the cache (``add``: only if absent, expiring after ``PENDING_S``) and publishes only when it
    set it; the task deletes the mark before it reads the state (:func:`clearing_started`). A
    request that finds the mark is therefore covered by a task that has not read the state yet,
    and will read it after this change committed (requests run after commit). A task that is
    lost with its mark set delays the next publish by at most ``PENDING_S`` seconds, and the
    sweeper (``services.sweeper``) clears any market left behind within its bound. With the
    cache down (``infra.resilience.cache_add`` fails open) every request publishes, as before. Under
    eager Celery the task runs here and now, unmarked."""
    from marketplace.celery import app

    if not app.conf.task_always_eager and not cache_add(_pending_key(market_id), 1, PENDING_S):
        return False
    return publish_task(CLEAR_TASK, market_id)


def clearing_started(*, market_id: int) -> None:
    """The clearing task's first step, before it reads the market: later changes publish again."""
    cache_delete(_pending_key(market_id))


_LAST_CLEARING: dict[int, float] = {}  # market id -> time.monotonic() when this process's last clearing of it ended
_LAST_CLEARING_LOCK = threading.Lock()


def clearing_pace(*, market_id: int, sleep: Callable[[float], None] | None = None) -> float:
    """Before a clearing task starts (before :func:`clearing_started`): wait until
    ``MARKET_CLEARING_MIN_INTERVAL_S`` has passed since this process's last clearing of the
    market ended. Returns the seconds waited (0 under eager Celery, which runs the task inside
    the request that asked for it, and when the setting is 0).

    Why: under a steady stream of bids the worker otherwise starts a solve the moment the last
    one ends (about 19 a second at ``make load``'s saturation), while the clock applies the
    newest Plan only at its ticks (twice a second). Changes that arrive during the wait still
    find the request mark set and publish nothing: this clearing, which reads the market after
    the wait, covers them. A change waits at most the interval longer for its clearing.
    """
    from marketplace.celery import app

    interval = float(getattr(settings, "MARKET_CLEARING_MIN_INTERVAL_S", 0.0))
    if interval <= 0 or app.conf.task_always_eager:
        return 0.0
    with _LAST_CLEARING_LOCK:
        last = _LAST_CLEARING.get(market_id)
    wait = 0.0 if last is None else last + interval - time.monotonic()
    if wait > 0:
        (sleep or time.sleep)(wait)
        return wait
    return 0.0


def clearing_finished(*, market_id: int) -> None:
    """The clearing task's last step: :func:`clearing_pace` counts the interval from now."""
    with _LAST_CLEARING_LOCK:
        _LAST_CLEARING[market_id] = time.monotonic()


# --- the engine ---------------------------------------------------------------------------------


@dataclass
class _Cached:
    version: int
    signature: str
    engine: MarketEngine
    marks: SyncMarks
    stored: dict[int, delta.Mark] | None = None  # the marks of the job records stored at ``version`` (None: unknown)


@dataclass(frozen=True)
class SyncMarks:
    """What an engine copy reflects, so a tick or clearing can skip reading what did not change.

    Attributes:
        state_version: the market's ``state_version`` whose bids and cancellations
            the engine has seen (-1: unknown, read them).
        clearings: the market's ``clearings`` count when the engine applied the
            newest stored Plan (-1: unknown, read it).
    """

    state_version: int = -1
    clearings: int = -1


UNKNOWN = SyncMarks()

_CACHE: dict[int, _Cached] = {}
_CACHE_LOCK = threading.Lock()


@dataclass(frozen=True)
class EngineContext:
    """What a tick or a clearing loads with the engine: tree, types, signature."""

    tree_map: adapters.TreeMap
    types: list[ResourceType]

    @property
    def signature(self) -> str:
        return f"{self.tree_map.signature}|{[t.pk for t in self.types]}"


def active_job_ids(*, market_id: int) -> set[int]:
    """Ids of the market's queued and running jobs (read by every tick that follows a bid)."""
    return rows.ids_where(Job, equal={"market": market_id}, within=("status", Job.ACTIVE))


def engine_context(market: Market) -> EngineContext:
    """The market's queue tree and resource types, read once per ``structure_version``
    (``marketplace.market.structure.per_structure``)."""
    context: EngineContext = structure.per_structure(
        "engine", market, lambda: EngineContext(adapters.queue_tree(market), adapters.resource_types(market)))
    return context


def structure_changed(*, market: Market) -> None:
    """The queue tree or a resource type changed: a new random ``structure_version``
    (random, so that no process's copy of an older structure can match it) and a
    market change. The caller holds the market row lock."""
    market.structure_version = new_structure_version()
    market.save(update_fields=["structure_version"])
    market_changed(market=market)


def new_structure_version() -> int:
    """A random non-zero version (0 means "never set": nothing is cached for it)."""
    return secrets.randbits(62) + 1


def engine_load(*, market: Market, context: EngineContext) -> MarketEngine:
    """The market's engine at ``market.engine_version`` (from memory when this process
    holds that version). A new engine when none is stored or the queue tree or the
    resource types changed (fair-share history restarts; running tasks go back to
    pending). The caller must not mutate it outside a tick (:func:`engine_store`
    or :func:`engine_forget` follow every mutation).
    """
    with _CACHE_LOCK:
        cached = _CACHE.get(market.pk)
    if cached is not None and cached.version == market.engine_version and cached.signature == context.signature:
        return cached.engine
    engine_forget(market_id=market.pk)  # its marks describe another version
    version, state, columns, records = _read_stored(market.pk)
    engine = _engine_of(context, state, columns, records)
    stored = None
    if engine is not None:
        stored = delta.marks_of(engine) if "parts" in state else None  # the records as stored (none: a whole-state format)
    else:
        if state:
            log.warning("market %s: queue tree or resource types changed; restarting the market engine", market.pk)
            _requeue_running(market)
        engine = MarketEngine.create(
            [t.capacity for t in context.types], context.tree_map.tree, adapters.market_config(market), seed=market.pk,
            sample_interval=settings.MARKET_SAMPLE_INTERVAL_S, now=market.sim_time, executor=settings.CLUSTER_EXECUTOR,
        )
    if market.engine_version and version == market.engine_version:  # 0: nothing stored yet, so nothing to key a copy by
        with _CACHE_LOCK:
            _CACHE[market.pk] = _Cached(market.engine_version, context.signature, engine, UNKNOWN, stored)
    return engine


READ_ATTEMPTS = 4  # optimistic reads of the stored engine before one under the market row lock


def _read_stored(market_id: int) -> tuple[int, dict[str, Any], bytes, dict[int, list[Any]]]:
    """The stored engine: (its ``engine_version``, the header document, the packed columns, the job
    records). Its parts are read in three statements, so a store that commits between them would
    mix two versions: the version is read again after them and the read repeated if it moved
    (versions are random, never reused); the last attempt holds the market row lock."""
    for attempt in range(READ_ATTEMPTS + 1):
        with transaction.atomic() if attempt == READ_ATTEMPTS else contextlib.nullcontext():
            query = Market.objects.filter(pk=market_id)
            if attempt == READ_ATTEMPTS:
                query = query.select_for_update()
            version, state = query.values_list("engine_version", "engine_state").get()
            state = state or {}
            if "parts" not in state:
                return version, state, b"", {}
            data = EngineColumns.objects.filter(market_id=market_id).values_list("data", flat=True).first()
            records = dict(EngineJob.objects.filter(market_id=market_id).values_list("job_id", "state"))
            if attempt == READ_ATTEMPTS or Market.objects.filter(pk=market_id, engine_version=version).exists():
                return version, state, b"" if data is None else bytes(data), records
    raise AssertionError("unreachable")  # the last attempt returns


def _engine_of(context: EngineContext, state: dict[str, Any], columns: bytes, records: dict[int, list[Any]]) -> MarketEngine | None:
    """The engine stored as ``state`` (parts, or the whole state of a store before parts), None when
    nothing is stored for the current queue tree and resource types."""
    if state.get("signature") != context.signature:
        return None
    if "parts" in state:
        return MarketEngine.from_state(context.tree_map.tree, delta.join(state["parts"], columns, records))
    if "engine" in state:
        return MarketEngine.from_state(context.tree_map.tree, state["engine"])
    return None


def engine_stored(*, market: Market, context: EngineContext) -> MarketEngine | None:
    """A fresh copy of the market's stored engine (the caller may step or clear it: nothing
    stored changes), None when nothing is stored for the current queue tree and resource types."""
    _, state, columns, records = _read_stored(market.pk)
    return _engine_of(context, state, columns, records)


def engine_peek(*, market: Market, context: EngineContext) -> MarketEngine | None:
    """The market's engine for reading only (a quote's outlook): this process's copy when it is
    the stored version, else one read from the stored state and not kept; None when nothing is
    stored for the current queue tree and resource types. Unlike :func:`engine_load` it never
    writes (no requeue after a structure change). The caller must not mutate it."""
    with _CACHE_LOCK:
        cached = _CACHE.get(market.pk)
    if cached is not None and cached.version == market.engine_version and cached.signature == context.signature:
        return cached.engine
    return engine_stored(market=market, context=context)


def engine_marks(*, market: Market) -> SyncMarks:
    """The :class:`SyncMarks` of this process's copy of the market's engine (UNKNOWN if none)."""
    with _CACHE_LOCK:
        cached = _CACHE.get(market.pk)
    return cached.marks if cached is not None and cached.version == market.engine_version else UNKNOWN


def engine_store(*, market: Market, context: EngineContext, engine: MarketEngine, marks: SyncMarks = UNKNOWN,
                 batch: Batch | None = None) -> None:
    """Store the engine under a new ``engine_version`` (the caller holds the market row lock
    and saves ``market`` with :data:`ENGINE_FIELDS`, in the same transaction). With ``batch``
    the writes of the records and the columns are added to it (the caller runs it, with the
    market row's save in it: a tick's last statement, ``services.clock``).

    When ``engine`` is this process's copy of the stored version (:func:`engine_load` gave it),
    only the records of the jobs that changed since are written, and those of departed jobs
    deleted; otherwise every record is written again. The header and the columns are written
    every time (docs/engine.md).

    The version is random, not a counter: a copy in memory must never match
    another row that happens to reuse a primary key and a count (test
    databases, a restored backup)."""
    with _CACHE_LOCK:
        cached = _CACHE.get(market.pk)
    base = cached.stored if (cached is not None and cached.engine is engine and cached.version == market.engine_version
                             and cached.signature == context.signature) else None
    parts = delta.split(engine, base)
    pk = market.pk
    if base is None:  # at once: the records written next are the rows it deletes (one batch must not touch a row twice)
        rows.delete_where(EngineJob, equal={"market": pk})
    else:  # the departed jobs' records: none of them is written next
        rows.delete_where(EngineJob, equal={"market": pk}, within=("job_id", parts.gone), batch=batch)
    rows.upsert_documents(EngineJob, fixed={"market": pk}, key="job_id", document="state", rows=list(parts.records.items()),
                          batch=batch)
    rows.upsert_rows(EngineColumns, ("market", "data"), ("market",), [(pk, parts.columns)], batch=batch)
    market.engine_version = secrets.randbits(62) + 1
    market.engine_state = {"signature": context.signature, "parts": parts.header}
    version = market.engine_version
    # Remember it only once the transaction commits: a rollback must not leave
    # this process with an engine the database never saw.
    transaction.on_commit(lambda: _remember(pk, _Cached(version, context.signature, engine, marks, parts.marks)))


ENGINE_FIELDS = ["engine_state", "engine_version"]


def _remember(pk: int, cached: _Cached) -> None:
    with _CACHE_LOCK:
        _CACHE[pk] = cached


def engine_forget(*, market_id: int) -> None:
    """Drop this process's copy (after a failed tick mutated it)."""
    with _CACHE_LOCK:
        _CACHE.pop(market_id, None)


def _requeue_running(market: Market) -> None:
    JobWork.objects.filter(job__market=market, job__status__in=Job.ACTIVE, running__gt=0).update(
        pending=F("pending") + F("running"), running=0
    )
