"""Where the parts plug into the market's core: one typed surface, :class:`MarketPart`.

The clearing, the clock's tick, the sweeper and the quotes do work that belongs to a mechanism:
ERA's reserved jobs stay out of the auction and are booked in the engine (paper 001, Sec. 2.3),
Cura's VM pools run on the market's clock (paper 004, Sec. III), the lab's runs are published
again after a broker outage, a deadline booking's slots are a promise every quote leaves free
(paper 003, Sec. 3). Each part has one :class:`MarketPart` subclass in its ``hooks.py`` that
overrides the hooks it needs; every hook has a default that does nothing, as saleor's
``BasePlugin`` does. The parts are loaded from one setting, ``MARKET_PARTS`` (dotted paths, in
order), as saleor's ``PLUGINS`` and Volcano's tiers are: that order is the order the core calls
them in, and for a hook with one answer (the market's price curve) the first part that gives one
wins. Import order never decides anything. A new mechanism plugs in with a package, a
``MarketPart`` and a line in ``MARKET_PARTS``; its own settings are its :attr:`MarketPart.arguments`
(Volcano's per-plugin ``Arguments``), kept in ``Market.part_arguments`` under its name, so it
needs no column and no migration of the core's ``Market``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from django.conf import settings
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    import numpy as np

    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import ResourceType
    from marketplace.market.models.tenants import Tenant
    from simulator.market.engine import MarketEngine

log = logging.getLogger(__name__)

PricePoint = tuple[str, int, float, float]
"""(what was priced, resource column j, simulated time, money per slot-second): one price a part offered."""

class Promise(NamedTuple):
    """Units of one type promised to one job in the simulated-time window [start, end)."""

    j: int
    """Resource column in the market's resource-type order."""
    units: int
    start: float
    end: float
    job_id: int | None = None
    """The job the units are promised to (None where a part does not say)."""

Curve = tuple["np.ndarray", "np.ndarray"]
"""(slot starts (k,) simulated s, (m, k) price of one more unit of each type in each slot, money per
slot-second; inf where a slot has no unit left)."""


class PartJob(NamedTuple):
    """A job a part runs outside the auction's jobs (Cura's VM-pool jobs), as My jobs and the
    account's ledger link to it."""

    label: str
    """How pages name it, e.g. ``"Cura job #12"``."""
    url: str
    """The page that shows it."""
    status: str
    summary: str
    """One line: what it runs, until when (market clock), what it holds or paid."""


class PartArgumentError(ValueError):
    """A part's arguments that its :attr:`MarketPart.arguments` refuses; ``errors`` maps field to message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class MarketPart:
    """One part of the market as the core sees it: every hook the core calls, each with a default.

    Subclasses set :attr:`name` (the part's package name) and override what they do. Hooks run
    inside the caller's transaction where the caller holds one (the tick's, under the market row
    lock); they must not enqueue tasks there (use ``transaction.on_commit``).
    """

    name: ClassVar[str] = ""
    idle_until_used: ClassVar[bool] = False
    """True: until the part records its first use in a market (``services.market.part_in_use``, in the
    transaction that writes its first row), its :meth:`clearing_exclusions`, :meth:`engine_sync` and
    :meth:`tick_work` have nothing to do there, and the core skips them: no query a clearing or a tick
    (``Market.parts_in_use``, read with the market row)."""
    arguments: ClassVar[type[Any] | None] = None
    """A frozen dataclass of the part's own settings, each field with a default; ``None``: it has none.
    A field may add ``metadata={"min": x, "max": y, "help": "..."}``; values live in
    ``Market.part_arguments[name]`` (:func:`part_arguments`)."""

    def clearing_exclusions(self, job_ids: list[int]) -> set[int]:
        """Of these new jobs (ids), the ones the part serves itself: a clearing leaves them out of
        the auction (ERA: reserved jobs, paper 001)."""
        return set()

    def fixed_price_jobs(self, job_ids: list[int]) -> set[int]:
        """Of these jobs (ids), the ones the part sold at a price fixed at acceptance (a reservation,
        a booking): a cancellation keeps that price paid (docs/economy.md, "Cancellations")."""
        return set()

    def engine_sync(self, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
        """At a tick's sync (the market row locked): tell the engine what the part holds (bookings)."""

    def before_tick(self, market_id: int) -> None:
        """Before a tick, outside any transaction and lock: read what the part's outside world says
        (a real cluster's job states, say), so the tick itself stays short."""

    def engine_report(self, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
        """Every tick before its steps, on the tick's engine, in its transaction: what the outside world
        reported since (a real cluster's task ends and the cores it has free)."""

    def engine_stepped(self, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
        """After a tick's steps, on the tick's engine, in its transaction: take what the steps
        decided for the outside world (the batches a real cluster must start)."""

    def tick_work(self, market: Market) -> None:
        """After a tick's steps, in its transaction and on its clock (``market.sim_time`` already moved)."""

    def after_tick(self, market_id: int) -> None:
        """After the clock's tick of the market committed, outside any transaction and lock: work that reads
        what the tick wrote and must not hold the clock (the dashboard's figures, computed for its viewers)."""

    def sweep_work(self) -> list[int]:
        """The sweeper's work for the part (outside any market's lock); returns the ids it acted on."""
        return []

    def executions(self, market: Market, job_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        """Job -> how its tasks run outside the model, newest first, one dict per task with the keys ``id``
        (the executor's id of it), ``executor``, ``state`` (the market's view: new, submitted, running,
        completed, failed, lost, cancelled), ``executor_state``, ``reason``, ``exit_code``, ``where``,
        ``reservation``, ``attempt``; shown on the job page and in the cluster API. Default: nothing."""
        return {}

    def promises(self, market: Market, types: Sequence[ResourceType], start: float, end: float) -> list[Promise]:
        """The part's promises to active jobs whose window overlaps [start, end) (simulated s)."""
        return []

    def price_curve(self, market: Market, types: Sequence[ResourceType], start: float, end: float) -> Curve | None:
        """The market's price curve over [start, end), if this part prices time slots; else None."""
        return None

    def price_points(self, market: Market, types: Sequence[ResourceType], since: float) -> list[PricePoint]:
        """The part's prices offered since ``since`` (simulated s), money per slot-second."""
        return []

    def tenant_jobs(self, tenant: Tenant, limit: int) -> list[PartJob]:
        """The tenant's ``limit`` newest jobs this part runs outside the auction's jobs (newest first)."""
        return []

    def ledger_jobs(self, entry_ids: list[int]) -> dict[int, PartJob]:
        """Ledger entry id -> the part's job it moved money for, for entries with no auction job."""
        return {}


_PARTS: tuple[MarketPart, ...] | None = None


def parts() -> tuple[MarketPart, ...]:
    """The parts of ``settings.MARKET_PARTS``, in that order (loaded once per process).

    Raises:
        ImproperlyConfigured-like ``ImportError``/``TypeError``: a path that names no ``MarketPart``
        subclass, or two parts with one name.
    """
    global _PARTS
    if _PARTS is None:
        loaded: list[MarketPart] = []
        for path in getattr(settings, "MARKET_PARTS", ()):
            cls = import_string(path)
            if not (isinstance(cls, type) and issubclass(cls, MarketPart)) or not cls.name:
                raise TypeError(f"MARKET_PARTS: {path} is not a named MarketPart subclass")
            if any(p.name == cls.name for p in loaded):
                raise TypeError(f"MARKET_PARTS: two parts are named {cls.name!r}")
            loaded.append(cls())
        _PARTS = tuple(loaded)
    return _PARTS


def reload_parts() -> tuple[MarketPart, ...]:
    """Load ``MARKET_PARTS`` again (after a settings change in a test)."""
    global _PARTS
    _PARTS = None
    return parts()


def part(name: str) -> MarketPart:
    """The loaded part named ``name``. Raises KeyError when no part of ``MARKET_PARTS`` has it."""
    for p in parts():
        if p.name == name:
            return p
    raise KeyError(name)


# ---------------------------------------------------------------- what the core calls

def in_use(market: Market) -> list[MarketPart]:
    """The parts whose hooks have work in ``market``: all, except those idle until used
    (:attr:`MarketPart.idle_until_used`) that the market does not name in ``parts_in_use``."""
    used = market.parts_in_use
    return [p for p in parts() if not p.idle_until_used or p.name in used]


def excluded_from_clearing(market: Market, job_ids: Iterable[int]) -> set[int]:
    """The jobs among ``job_ids`` that some part in use serves itself (never in the auction)."""
    ids = list(job_ids)
    out: set[int] = set()
    if ids:
        for p in in_use(market):
            out |= p.clearing_exclusions(ids)
    return out


def fixed_price_jobs(job_ids: Iterable[int]) -> set[int]:
    """The jobs among ``job_ids`` that some part sold at a price fixed at acceptance."""
    ids = list(job_ids)
    out: set[int] = set()
    if ids:
        for p in parts():
            out |= p.fixed_price_jobs(ids)
    return out


def sync_engine(market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
    """Every part's in use :meth:`MarketPart.engine_sync`, in ``MARKET_PARTS`` order."""
    for p in in_use(market):
        p.engine_sync(market, engine, types)


def before_tick(market_id: int) -> None:
    """Every part's :meth:`MarketPart.before_tick`; one part's failure is logged, the tick goes on."""
    for p in parts():
        try:
            p.before_tick(market_id)
        except Exception:
            log.exception("before-tick work of %s failed", p.name)


def after_tick(market_id: int) -> None:
    """Every part's :meth:`MarketPart.after_tick`; one part's failure is logged, the clock goes on."""
    for p in parts():
        try:
            p.after_tick(market_id)
        except Exception:
            log.exception("after-tick work of %s failed", p.name)


def engine_report(market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
    """Every part's :meth:`MarketPart.engine_report`, in ``MARKET_PARTS`` order (an error aborts the tick)."""
    for p in parts():
        p.engine_report(market, engine, types)


def engine_stepped(market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
    """Every part's :meth:`MarketPart.engine_stepped`, in ``MARKET_PARTS`` order (an error aborts the tick)."""
    for p in parts():
        p.engine_stepped(market, engine, types)


def run_tick_work(market: Market) -> None:
    """Every part's in use :meth:`MarketPart.tick_work`, in ``MARKET_PARTS`` order (an error aborts the tick)."""
    for p in in_use(market):
        p.tick_work(market)


def tick_work_due(market: Market) -> bool:
    """True when a part in use has a :meth:`MarketPart.tick_work` of its own (the others' is the default's: nothing)."""
    return any(getattr(p.tick_work, "__func__", None) is not MarketPart.tick_work for p in in_use(market))


def run_sweep_work() -> list[int]:
    """Every part's :meth:`MarketPart.sweep_work`; one part's failure (the broker or the database
    still away) is logged and does not stop the others: the next sweep tries again."""
    done: list[int] = []
    for p in parts():
        try:
            done += p.sweep_work()
        except Exception:
            log.exception("sweep work of %s failed", p.name)
    return done


def executions(market: Market, job_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Every part's :meth:`MarketPart.executions`, merged (job -> its tasks outside the model)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for p in parts():
        for job_id, rows in p.executions(market, job_ids).items():
            out.setdefault(job_id, []).extend(rows)
    return out


def promised_windows(market: Market, types: Sequence[ResourceType], start: float, end: float) -> list[Promise]:
    """Every part's promises to active jobs overlapping [start, end) (simulated seconds): what a
    quote must leave free, whichever mechanism made the promise (papers 001 and 003)."""
    out: list[Promise] = []
    for p in parts():
        out += p.promises(market, types, start, end)
    return out


def price_curve(market: Market, types: Sequence[ResourceType], start: float, end: float) -> Curve | None:
    """The market's price curve over [start, end) (:data:`Curve`): the first part in ``MARKET_PARTS``
    order that prices time slots (ERA's), or None. One curve for every quote (docs/economy.md)."""
    for p in parts():
        curve = p.price_curve(market, types, start, end)
        if curve is not None:
            return curve
    return None


def offered_prices(market: Market, types: Sequence[ResourceType], since: float) -> list[PricePoint]:
    """Every part's prices offered since ``since`` (simulated s), per slot-second."""
    out: list[PricePoint] = []
    for p in parts():
        out += p.price_points(market, types, since)
    return out


def tenant_part_jobs(tenant: Tenant, limit: int = 10) -> list[tuple[str, list[PartJob]]]:
    """(part name, the tenant's newest jobs of that part) for every part that runs jobs of its own."""
    return [(p.name, jobs) for p in parts() if (jobs := p.tenant_jobs(tenant, limit))]


def ledger_part_jobs(entry_ids: list[int]) -> dict[int, PartJob]:
    """Every part's :meth:`MarketPart.ledger_jobs`, merged (entry id -> the part's job)."""
    out: dict[int, PartJob] = {}
    for p in parts():
        out.update(p.ledger_jobs(entry_ids))
    return out


# ---------------------------------------------------------------- per-part arguments

def part_arguments(market: Market, name: str) -> Any:
    """The part ``name``'s arguments for ``market``: its :attr:`MarketPart.arguments` dataclass built
    from its defaults and what ``market.part_arguments[name]`` holds (unknown keys ignored).

    Raises:
        KeyError: no part of that name; TypeError: the part declares no arguments.
    """
    cls = part(name).arguments
    if cls is None:
        raise TypeError(f"part {name!r} has no arguments")
    stored = (market.part_arguments or {}).get(name, {})
    known = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in stored.items() if k in known})


def validate_part_arguments(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` for part ``name`` checked against its dataclass: known fields only, each of the
    field's type (int, float, bool, str, or a tuple of str), finite and within ``metadata`` min/max.
    Returns the cleaned values (JSON-ready).

    Raises:
        PartArgumentError: field-level messages; KeyError: no such part; TypeError: no arguments.
    """
    cls = part(name).arguments
    if cls is None:
        raise TypeError(f"part {name!r} has no arguments")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    errors: dict[str, str] = {}
    clean: dict[str, Any] = {}
    for key, value in values.items():
        f = fields.get(key)
        if f is None:
            errors[key] = f"unknown argument; {name} takes: {', '.join(fields)}"
            continue
        message, cleaned = _check_field(f, value)
        if message:
            errors[key] = message
        else:
            clean[key] = cleaned
    if errors:
        raise PartArgumentError(errors)
    return clean


def _check_field(f: dataclasses.Field[Any], value: Any) -> tuple[str, Any]:
    kind = type(f.default) if f.default is not dataclasses.MISSING else str
    if kind is bool:
        return ("", value) if isinstance(value, bool) else ("must be true or false", None)
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and not float(value).is_integer()):
            return (f"must be {'an integer' if kind is int else 'a number'}", None)
        if not math.isfinite(value):
            return ("must be finite", None)
        lo, hi = f.metadata.get("min"), f.metadata.get("max")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return (f"must be within [{lo}, {hi}]", None)
        return ("", kind(value))
    if kind is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
            return ("must be a list of non-empty strings", None)
        return ("", list(value))
    return ("", value) if isinstance(value, str) else ("must be a string", None)
