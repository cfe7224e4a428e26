"""Turning auction shares into unit-by-unit dispatch (paper 000, Sec. 3; docs/mechanisms.md, "Dispatch").

When a unit of resource type j frees inside a leaf queue, it goes to one of the
queue's jobs with pending work for j (the *eligible* jobs). Two rules:

* ``"lottery"`` (paper 000, Sec. 3): job k wins with probability ``s_kj``
  renormalised over the eligible jobs (uniform if they all have share 0).
* ``"stride"`` (deterministic deficit rule, this project's choice): every
  eligible job earns its renormalised share as credit, the job with the largest
  credit wins the unit and pays 1. For a fixed eligible set and fixed shares the
  credit equals ``share * units_served_in_the_set - units_served_by_the_job``,
  so the counts track the shares with bounded error instead of the lottery's
  ``sqrt(units)`` spread (observed: at most 1.2 units off ``share * units``
  with up to 12 jobs). Credits are clipped to [-2, 2], a range a fixed set
  never leaves, so a job that was ineligible, or whose share just changed,
  cannot claim a burst of units to "catch up": like the paper's lottery,
  dispatch keeps almost no memory of past shares.
* ``"fifo"``: the oldest eligible job (the caller lists jobs in arrival
  order); shares are ignored. With the ``fifo`` fair-share policy across
  queues this makes the cluster a plain FIFO scheduler (YARN's ``fifo``).

A dispatcher is a small piece of state the live market keeps between ticks:
``to_state`` / ``from_state`` give a JSON-serialisable snapshot of it,
including the lottery's random-generator state.

Stride runs once per unit granted, over every eligible job of the leaf (k up
to hundreds in the live market), so it keeps the credits of one leaf's jobs
for one resource type in a *ledger* between calls, found by the bytes of the
``job_ids`` array: a unit then costs a few numpy operations on a (k,) float64
vector (plain Python lists for k <= ``_SMALL_LEDGER``, where numpy's per-call
overhead is the larger cost). The arithmetic is the rule's, in the same order
(``credit + share``, ``- 1`` for the winner, clip to [-2, 2]), so choices and
credits are bit-identical to a dict of Python floats updated job by job
(``bench/dispatch_reference.py`` is that reference, and a property
test holds the two equal). A ledger's credits go back to the dict when
``to_state`` or ``forget`` needs them, or when another id array claims one of
its jobs for the same resource (the leaf's membership changed).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from itertools import repeat
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import NDArray

DispatchMode = Literal["stride", "lottery", "fifo"]
MODES: tuple[str, ...] = get_args(DispatchMode)
_CREDIT_LIMIT = 2.0
_PLAIN_SUM = 8  # numpy sums fewer values than this one by one (pairwise from 8 on): choose's plain path
_SMALL_LEDGER = 12  # a ledger of at most this many jobs keeps Python lists (the crossover measured by bench/bench_dispatch.py)


class ShareDispatcher:
    """Chooses which eligible job of a leaf queue gets a free unit of a resource type.

    Args:
        mode: "stride" (deterministic deficit rule), "lottery" (paper 000,
            Sec. 3: probability proportional to share) or "fifo" (oldest
            eligible job; ``job_ids`` must be in arrival order).
        seed: seed of the lottery's numpy Generator (PCG64).

    Raises:
        ValueError: unknown mode.
    """

    def __init__(self, mode: DispatchMode = "stride", seed: int = 0) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown dispatch mode {mode!r}; use one of {MODES}")
        self.mode: DispatchMode = mode
        self.seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self.seed))
        # (job, resource) -> credit, for the pairs no live ledger holds (a ledger's copy is the current one)
        self._credit: dict[tuple[int, int], float] = {}
        self._served: dict[tuple[int, int], int] = {}
        self._ledgers: dict[bytes, dict[int, _Ledger]] = {}  # job_ids.tobytes() -> resource -> ledger
        self._holder: dict[tuple[int, int], _Ledger] = {}  # (job, resource) -> the live ledger holding its credit
        self._resources: set[int] = set()  # every resource of a key above: forget() looks up only these

    def choose(
        self,
        job_ids: NDArray[np.int64],
        shares: NDArray[np.float64],
        eligible: NDArray[np.bool_],
        resource: int,
    ) -> int:
        """Position in ``job_ids`` of the job getting one unit of ``resource``, or -1.

        Args:
            job_ids: (k,) int64 distinct job identifiers of the leaf queue.
            shares: (k,) allocation probabilities s_kj for this resource type
                (finite, >= 0; need not sum to 1).
            eligible: (k,) bool, the job has pending work for this resource.
            resource: resource-type index j (>= 0).

        Returns:
            The winner's position, or -1 when no job is eligible.

        Raises:
            ValueError: mismatched shapes, duplicate ids, negative or
                non-finite shares, negative resource index.

        Under stride, ``shares`` and ``eligible`` given as read-only numpy arrays
        (``flags.writeable`` False: the caller's cache, e.g. the cluster's
        placement) are checked and renormalised once for consecutive calls.
        """
        ids, weights, mask = _check_shapes(job_ids, shares, eligible)
        if self.mode == "stride" and ids.shape[0] < _PLAIN_SUM:
            return self._choose_plain(ids, weights, mask, resource)
        raw = ids.tobytes() if self.mode == "stride" else b""
        ledgers = self._ledgers.get(raw)  # only stride opens ledgers
        if ledgers is None:  # ids with a ledger were checked when it opened
            _check_distinct(ids)
        else:
            ledger = ledgers.get(int(resource))
            frozen = None if ledger is None else ledger.frozen
            if ledger is not None and frozen is not None and frozen[0] is weights and frozen[1] is mask \
                    and int(resource) == resource:
                # the read-only arrays this ledger last checked and renormalised: the same values
                position = ledger.grant(frozen[2], mask)
                key = (int(ids[position]), int(resource))
                self._served[key] = self._served.get(key, 0) + 1
                return position
        _check_values(weights, resource)
        if not np.count_nonzero(mask):
            return -1
        if self.mode == "fifo":
            position = int(np.argmax(mask))  # jobs come in arrival order: the oldest eligible
        elif self.mode == "lottery":
            position = self._draw(_renormalise(weights, mask))
        else:
            ledger = None if ledgers is None else ledgers.get(int(resource))
            if ledger is None:
                ledger = self._open(ids, raw, int(resource))
            renormalised = _renormalise(weights, mask)
            if not (weights.flags.writeable or mask.flags.writeable):  # nobody can change them: kept for the next call
                renormalised.flags.writeable = False
                ledger.frozen = (weights, mask, renormalised)
            position = ledger.grant(renormalised, mask)
        key = (int(ids[position]), int(resource))
        self._served[key] = self._served.get(key, 0) + 1
        self._resources.add(key[1])
        return position

    def _choose_plain(self, ids: NDArray[np.int64], weights: NDArray[np.float64], mask: NDArray[np.bool_],
                      resource: int) -> int:
        """:meth:`choose` under stride for fewer than ``_PLAIN_SUM`` jobs, on Python lists: numpy sums
        so few values one by one from 0.0, so the checks, the renormalised shares and the ledger's
        grant see the same floats; the same errors, in the same order."""
        raw = ids.tobytes()
        ledgers = self._ledgers.get(raw)
        if ledgers is None:
            _check_distinct(ids)
        values: list[float] = weights.tolist()
        flags: list[bool] = mask.tolist()
        total, nonnegative = 0.0, True
        for v in values:
            nonnegative = nonnegative and v >= 0  # NaN fails it
            total += v
        if not (nonnegative and math.isfinite(total)):
            raise ValueError("shares must be finite and >= 0")
        if int(resource) != resource or resource < 0:
            raise ValueError(f"resource must be a non-negative integer, got {resource}")
        if True not in flags:
            return -1
        ledger = None if ledgers is None else ledgers.get(int(resource))
        if ledger is None:
            ledger = self._open(ids, raw, int(resource))
        restricted = [v if f else 0.0 for v, f in zip(values, flags, strict=True)]  # _renormalise
        total = 0.0
        for v in restricted:
            total += v
        if total > 0:
            earned = [v / total for v in restricted]
        else:
            count = flags.count(True)
            earned = [(1.0 if f else 0.0) / count for f in flags]
        if isinstance(ledger, _ListLedger):
            position = ledger.grant_lists(earned, flags)
        else:
            position = ledger.grant(np.array(earned, dtype=np.float64), mask)
        key = (ledger.ids[position] if isinstance(ledger, _ListLedger) else int(ids[position]), int(resource))
        self._served[key] = self._served.get(key, 0) + 1  # a ledger is open for the resource: _open noted it
        return position

    def record(self, job_id: int, resource: int, units: int) -> None:
        """Count ``units`` given to ``job_id`` without a choice (it was the only candidate)."""
        key = (int(job_id), int(resource))
        self._served[key] = self._served.get(key, 0) + int(units)
        self._resources.add(key[1])

    def served(self, job_id: int, resource: int) -> int:
        """Units of ``resource`` this dispatcher has given to ``job_id``."""
        return self._served.get((int(job_id), int(resource)), 0)

    def forget(self, job_id: int) -> None:
        """Drop every counter of a finished job (no error if unknown)."""
        job = int(job_id)
        for resource in self._resources:  # a few resource types, not every job's keys
            ledger = self._holder.get((job, resource))
            if ledger is not None:
                self._close(ledger)
        for resource in self._resources:
            self._credit.pop((job, resource), None)
            self._served.pop((job, resource), None)

    def to_state(self, *, counters: bool = True) -> dict[str, Any]:
        """JSON-serialisable state; 128-bit generator words are stored as strings. Without
        ``counters``, no "counters" entry (:meth:`counter_array` gives them as one array)."""
        self._write_back_all()
        rng = self._rng.bit_generator.state
        state: dict[str, Any] = {
            "mode": self.mode,
            "seed": self.seed,
            "rng": {
                "state": str(rng["state"]["state"]),
                "inc": str(rng["state"]["inc"]),
                "has_uint32": int(rng["has_uint32"]),
                "uinteger": int(rng["uinteger"]),
            },
        }
        if counters:
            state["counters"] = [
                [job, res, self._credit.get((job, res), 0.0), self._served.get((job, res), 0)]
                for job, res in sorted(set(self._credit) | set(self._served))
            ]
        return state

    def counter_array(self) -> NDArray[np.float64]:
        """(n, 4) float64: ``to_state()["counters"]`` as one array, rows [job, resource, credit,
        units served] sorted by (job, resource), without a list a counter."""
        self._write_back_all()
        credit, served = self._credit, self._served
        keys = list(credit)
        keys += [key for key in served if key not in credit]
        n = len(keys)
        out = np.empty((n, 4), dtype=np.float64)
        if n:  # the columns in the dicts' order, then one sort by (job, resource): no sort of n tuples in Python
            pairs = np.array(keys, dtype=np.float64)
            order = np.lexsort((pairs[:, 1], pairs[:, 0]))
            out[:, :2] = pairs[order]
            out[:, 2] = np.fromiter(map(credit.get, keys, repeat(0.0)), dtype=np.float64, count=n)[order]
            out[:, 3] = np.fromiter(map(served.get, keys, repeat(0)), dtype=np.float64, count=n)[order]
        return out

    def _write_back_all(self) -> None:
        """Every live ledger's credits into the dict (they stay open)."""
        for by_resource in self._ledgers.values():
            for ledger in by_resource.values():
                self._write_back(ledger)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ShareDispatcher:
        """Rebuild a dispatcher from :meth:`to_state`; its future choices are identical.

        Raises KeyError / ValueError on a malformed state (a non-finite credit
        among them: no sequence of choices makes one).
        """
        dispatcher = cls(mode=state["mode"], seed=int(state["seed"]))
        rng = state["rng"]
        dispatcher._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int(rng["state"]), "inc": int(rng["inc"])},
            "has_uint32": int(rng["has_uint32"]),
            "uinteger": int(rng["uinteger"]),
        }
        for job, res, credit, served in state["counters"]:
            key = (int(job), int(res))
            dispatcher._credit[key] = float(credit)
            dispatcher._served[key] = int(served)
            dispatcher._resources.add(key[1])
            if not math.isfinite(dispatcher._credit[key]):
                raise ValueError(f"credit of job {job}, resource {res} is not finite: {credit!r}")
        return dispatcher

    def _draw(self, probabilities: NDArray[np.float64]) -> int:
        """Lottery draw by inverse CDF (one uniform per unit, reproducible)."""
        cumulative = np.cumsum(probabilities)
        u = self._rng.random() * cumulative[-1]
        position = int(np.searchsorted(cumulative, u, side="right"))
        # guard the u == total edge and skip zero-probability positions
        position = min(position, int(probabilities.shape[0]) - 1)
        while probabilities[position] == 0:
            position -= 1
        return position

    def _open(self, ids: NDArray[np.int64], raw: bytes, resource: int) -> _Ledger:
        """A ledger for the (distinct) ``ids`` and ``resource``, from the dict's credits.

        A live ledger holding one of these jobs for ``resource`` (the leaf's
        jobs before one arrived or left) is closed first: a pair's credit
        lives in one place.
        """
        id_list: list[int] = ids.tolist()
        for job in id_list:
            held = self._holder.get((job, resource))
            if held is not None:
                self._close(held)
        keys = [(job, resource) for job in id_list]
        credit = [self._credit.get(key, 0.0) for key in keys]
        known = [key in self._credit for key in keys]
        kind = _ListLedger if len(id_list) <= _SMALL_LEDGER else _ArrayLedger
        ledger = kind(raw, resource, id_list, credit, known)
        self._ledgers.setdefault(raw, {})[resource] = ledger
        self._resources.add(resource)
        for key in keys:
            self._holder[key] = ledger
        return ledger

    def _close(self, ledger: _Ledger) -> None:
        """Write a ledger's credits back to the dict and drop it."""
        self._write_back(ledger)
        for job in ledger.ids:
            del self._holder[(job, ledger.resource)]
        by_resource = self._ledgers[ledger.raw]
        del by_resource[ledger.resource]
        if not by_resource:
            del self._ledgers[ledger.raw]

    def _write_back(self, ledger: _Ledger) -> None:
        """Copy the credits a ledger changed since its last write-back into the dict."""
        if ledger.dirty:
            for job, credit in ledger.credits():
                self._credit[(job, ledger.resource)] = credit
            ledger.dirty = False


class _Ledger(ABC):
    """The stride credits of one id array's jobs for one resource type, between calls.

    Attributes:
        raw: ``job_ids.tobytes()`` of the ids it serves (its key).
        resource: the resource-type index j.
        ids: the job ids, in the ledger's own order.
        dirty: a credit changed since the last write-back to the dict.
        frozen: the shares and eligibility of the last call, with its renormalised shares, when both
            were read-only arrays (nobody can change them): a call with the same two objects skips
            their checks and the renormalisation.
    """

    __slots__ = ("dirty", "frozen", "ids", "raw", "resource")

    def __init__(self, raw: bytes, resource: int, ids: list[int]) -> None:
        self.raw, self.resource, self.ids, self.dirty = raw, resource, ids, False
        # (shares, eligible, renormalised shares) of the last call whose shares and eligible were read-only arrays
        self.frozen: tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]] | None = None

    @abstractmethod
    def grant(self, renormalised: NDArray[np.float64], mask: NDArray[np.bool_]) -> int:
        """Deficit rule for one unit: eligible jobs earn their share; the largest
        credit wins and pays 1, ties to the lowest id; eligible credits are clipped
        to [-2, 2]. ``renormalised``, ``mask``: (k,) in the caller's order, at least
        one eligible. Returns the winner's position in the caller's order."""

    @abstractmethod
    def credits(self) -> list[tuple[int, float]]:
        """(job, credit) of the jobs that ever had a credit (dict semantics: a job
        that never was a candidate has no entry)."""


class _ListLedger(_Ledger):
    """Python lists in the caller's order: for small k, a loop beats numpy's call overhead."""

    __slots__ = ("credit", "known")

    def __init__(self, raw: bytes, resource: int, ids: list[int], credit: list[float], known: list[bool]) -> None:
        super().__init__(raw, resource, ids)
        self.credit, self.known = credit, known

    def grant(self, renormalised: NDArray[np.float64], mask: NDArray[np.bool_]) -> int:
        return self.grant_lists(renormalised.tolist(), mask.tolist())

    def grant_lists(self, earned: list[float], mask: list[bool]) -> int:
        """:meth:`grant` on lists."""
        credit, ids, known = self.credit, self.ids, self.known
        candidates = [q for q, flag in enumerate(mask) if flag]
        best, top = -1, 0.0
        for q in candidates:
            value = credit[q] = credit[q] + earned[q]
            # the largest (credit, -id): ids are distinct, so there is one
            if best < 0 or value > top or (value == top and ids[q] < ids[best]):
                best, top = q, value
        credit[best] -= 1.0
        for q in candidates:
            credit[q] = min(max(credit[q], -_CREDIT_LIMIT), _CREDIT_LIMIT)
            known[q] = True
        self.dirty = True
        return best

    def credits(self) -> list[tuple[int, float]]:
        return [(job, c) for job, c, k in zip(self.ids, self.credit, self.known, strict=True) if k]


class _ArrayLedger(_Ledger):
    """A (k,) float64 vector in increasing id order, so ``argmax``'s first maximum
    is the lowest id among equal credits; ``order`` maps it to the caller's order
    (None when the caller's ids already increase)."""

    __slots__ = ("all_known", "credit", "known", "order")

    def __init__(self, raw: bytes, resource: int, ids: list[int], credit: list[float], known: list[bool]) -> None:
        array = np.array(ids, dtype=np.int64)
        order: NDArray[np.intp] | None = None if bool(np.all(array[1:] > array[:-1])) else np.argsort(array, kind="stable")
        index = range(len(ids)) if order is None else order.tolist()
        super().__init__(raw, resource, [ids[q] for q in index])
        self.order = order
        self.credit = np.array([credit[q] for q in index], dtype=np.float64)
        self.known = np.array([known[q] for q in index], dtype=np.bool_)
        self.all_known = bool(self.known.all())

    def grant(self, renormalised: NDArray[np.float64], mask: NDArray[np.bool_]) -> int:
        order = self.order
        share, elig = (renormalised, mask) if order is None else (renormalised[order], mask[order])
        value = self.credit + share
        # credits are finite (from_state rejects others), so -inf never ties an eligible job
        best = int(np.where(elig, value, -np.inf).argmax())
        value[best] -= 1.0
        np.minimum(np.maximum(value, -_CREDIT_LIMIT, out=value), _CREDIT_LIMIT, out=value)
        np.copyto(self.credit, value, where=elig)
        if not self.all_known:
            np.logical_or(self.known, elig, out=self.known)
            self.all_known = bool(self.known.all())
        self.dirty = True
        return best if order is None else int(order[best])

    def credits(self) -> list[tuple[int, float]]:
        values: list[float] = self.credit.tolist()
        if self.all_known:
            return list(zip(self.ids, values, strict=True))
        return [(job, c) for job, c, k in zip(self.ids, values, self.known.tolist(), strict=True) if k]


def _check_shapes(
    job_ids: NDArray[np.int64],
    shares: NDArray[np.float64],
    eligible: NDArray[np.bool_],
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]]:
    ids = np.asarray(job_ids, dtype=np.int64)
    weights = np.asarray(shares, dtype=np.float64)
    mask = np.asarray(eligible, dtype=np.bool_)
    if ids.ndim != 1 or weights.shape != ids.shape or mask.shape != ids.shape:
        shapes = f"{ids.shape}, {weights.shape}, {mask.shape}"
        raise ValueError(f"job_ids, shares and eligible must be (k,), got {shapes}")
    return ids, weights, mask


def _check_distinct(ids: NDArray[np.int64]) -> None:
    if len(set(ids.tolist())) != ids.shape[0]:
        raise ValueError("job_ids must be distinct")


def _check_values(weights: NDArray[np.float64], resource: int) -> None:
    # NaN fails ">= 0" and inf makes the sum infinite: two cheap checks cover both
    # (count_nonzero and math.isfinite: a unit of stride pays for every call here)
    if not (np.count_nonzero(weights >= 0) == weights.size and math.isfinite(weights.sum())):
        raise ValueError("shares must be finite and >= 0")
    if int(resource) != resource or resource < 0:
        raise ValueError(f"resource must be a non-negative integer, got {resource}")


def _renormalise(shares: NDArray[np.float64], mask: NDArray[np.bool_]) -> NDArray[np.float64]:
    """(k,) shares restricted to eligible jobs, summing to 1 (uniform if all zero)."""
    restricted: NDArray[np.float64] = np.where(mask, shares, 0.0)
    total = float(restricted.sum())
    if total > 0:
        return restricted / total
    uniform: NDArray[np.float64] = mask / mask.sum()
    return uniform
