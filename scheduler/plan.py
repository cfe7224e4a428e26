"""The Plan: what one market clearing decides (README, "The engine").

A clearing turns a :class:`~scheduler.types.MarketSnapshot` into a
:class:`Plan`. A Plan holds

* **reservations** -- ``(job, resource type, units, [start, end))`` in
  simulated seconds, decided by reservation-type mechanisms (ERA, paper 001
  Alg. 1; deadline bookings, paper 003; Cura's VM-aware scheduler, paper 004
  Alg. 1). During its window a reservation's units go to its job before
  anything else; a job with a reservation gets units only from it.
* **shares for everything else** -- ``(n, m)`` allocation probabilities
  inside each leaf queue (Abacus, paper 000 Sec. 3 Eq. 1), applied after
  H-LTRF (paper 002 Alg. 2) has picked the leaf queue.
* **the payment rule of each job** -- what it is charged and when:
  ``at_completion`` (the Abacus budget, paper 000 Sec. 3), ``if_slo_met``
  (paper 000 Sec. 6: a job pays only if its SLO was met) or ``fixed`` (a
  price fixed at acceptance, ERA paper 001 Sec. 3.1 Alg. 1 line 9).
* **diagnostics** with named fields: the mechanism, auction rounds, whether
  it converged, implied unit prices per resource type (money per unit-slot,
  i.e. per slot held for one clearing period), the largest KKT residual.

One market step (``simulator.market.engine.MarketEngine``) applies a Plan to the
cluster model through its ordered dispatch stages (reservations, then fair
share across queues, then shares inside a queue) and settles each departing
job with :func:`scheduler.payments.settle`. Everything here is plain, immutable data.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.deferred import DeferredFloat
from scheduler.payments import PAYMENT_KINDS, PaymentRule, PaymentTable


@dataclass(frozen=True)
class Reservation:
    """``units`` units of resource type ``resource`` held for ``job_id`` in [start, end).

    Attributes:
        job_id: the job the units are held for.
        resource: resource-type index j (column of the snapshot's arrays).
        units: whole units (slots), >= 1.
        start, end: simulated seconds, ``start < end``.

    Raises:
        ValueError: non-positive units, negative resource, or an empty or
            non-finite window.
    """

    job_id: int
    resource: int
    units: int
    start: float
    end: float

    def __post_init__(self) -> None:
        if int(self.units) != self.units or self.units < 1:
            raise ValueError(f"reservation of job {self.job_id}: units must be a whole number >= 1")
        if int(self.resource) != self.resource or self.resource < 0:
            raise ValueError(f"reservation of job {self.job_id}: resource must be an index >= 0")
        if not (math.isfinite(self.start) and math.isfinite(self.end) and self.start < self.end):
            raise ValueError(f"reservation of job {self.job_id}: the window [{self.start}, {self.end}) is empty or infinite")

    def to_list(self) -> list[Any]:
        """``[job_id, resource, units, start, end]``, the form every saved state uses."""
        return [self.job_id, self.resource, self.units, self.start, self.end]

    @classmethod
    def from_list(cls, row: Sequence[Any]) -> Reservation:
        """Inverse of :meth:`to_list`. Raises ValueError like the constructor."""
        job_id, resource, units, start, end = row
        return cls(int(job_id), int(resource), int(units), float(start), float(end))

    def active(self, now: float) -> bool:
        """True while ``start <= now < end``."""
        return self.start <= now < self.end


@dataclass(frozen=True, eq=False)
class Diagnostics:
    """How a clearing went, with named fields (replaces the old ``Outcome.extra``).

    Attributes:
        mechanism: registry name of the mechanism that produced the Plan.
        rounds: auction rounds run (0 for one-shot mechanisms).
        converged: whether the auction met its tolerance within the cap.
        prices: (m,) implied unit price per resource type: total sub-budget
            bid on j divided by capacity C_j (money per unit-slot).
        max_kkt_residual: largest KKT residual of the auction's fixed point
            (paper 000, Lemma 2); 0 for one-shot mechanisms. Given as a float,
            or as a ``scheduler.deferred.Deferred`` computed on the first read (then kept):
            a float either way when read, also by equality and the Plan's
            serialisations.
        outside_pool: ids of jobs left out of the SLO prolific pool (paper
            000, Sec. 6): they bid nothing and get only idle units.
    """

    mechanism: str
    rounds: int
    converged: bool
    prices: NDArray[np.float64]
    max_kkt_residual: DeferredFloat = DeferredFloat(0.0)  # noqa: RUF009 -- a descriptor-typed field: one per class by design
    outside_pool: tuple[int, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        """A copy or pickle carries the residual's value, never its computation."""
        _ = self.max_kkt_residual
        return dict(self.__dict__)

    def __eq__(self, other: object) -> bool:
        """Field by field, ``prices`` by value (``np.array_equal``: same shape, equal floats), so two
        clearings' diagnostics compare as a bool whatever their arrays' identity. Unhashable."""
        if not isinstance(other, Diagnostics):
            return NotImplemented
        return ((self.mechanism, self.rounds, self.converged, self.max_kkt_residual, self.outside_pool)
                == (other.mechanism, other.rounds, other.converged, other.max_kkt_residual, other.outside_pool)
                and bool(np.array_equal(self.prices, other.prices)))  # fmt: skip

    __hash__ = None  # type: ignore[assignment]  # mutable-valued arrays: as the generated eq made it


@dataclass(frozen=True, eq=False)
class Plan:
    """What a clearing decided (module docstring).

    Attributes:
        job_ids: (n,) int64, the snapshot's jobs, in its row order.
        shares: (n, m) float64 within-leaf allocation probabilities; each
            (leaf, j) block sums to 1 where some of its jobs demand j.
        sub_budgets: (n, m) float64 money each job bid on each resource type
            (the next clearing's warm start).
        reservations: reservations in force or to come, in any order.
        payments: job id -> its :class:`PaymentRule`.
        diagnostics: the clearing's :class:`Diagnostics`.
    """

    job_ids: NDArray[np.int64]
    shares: NDArray[np.float64]
    sub_budgets: NDArray[np.float64]
    payments: Mapping[int, PaymentRule]
    diagnostics: Diagnostics
    reservations: tuple[Reservation, ...] = field(default=())

    def __eq__(self, other: object) -> bool:
        """Field by field, the arrays by value (``np.array_equal``), so two Plans compare as a bool
        whatever their arrays' identity: the same decisions compare equal. Unhashable."""
        if not isinstance(other, Plan):
            return NotImplemented
        return (all(np.array_equal(a, b) for a, b in ((self.job_ids, other.job_ids), (self.shares, other.shares),
                                                      (self.sub_budgets, other.sub_budgets)))
                and self.payments == other.payments and self.diagnostics == other.diagnostics
                and self.reservations == other.reservations)  # fmt: skip

    __hash__ = None  # type: ignore[assignment]

    @property
    def n(self) -> int:
        return int(self.job_ids.shape[0])

    def share_rows(self) -> dict[int, NDArray[np.float64]]:
        """job id -> (m,) share row (views into ``shares``)."""
        return {int(job): self.shares[k] for k, job in enumerate(self.job_ids.tolist())}

    def reserved_jobs(self) -> frozenset[int]:
        """Ids of the jobs that hold a reservation (they get units only from it)."""
        return frozenset(r.job_id for r in self.reservations)

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable form (lists and floats; exact float round trip)."""
        return {
            "job_ids": self.job_ids.tolist(),
            "shares": self.shares.tolist(),
            "sub_budgets": self.sub_budgets.tolist(),
            "payments": [[job, p.kind, p.amount, p.min_utility] for job, p in sorted(self.payments.items())],
            **self.to_state_header(),
        }

    def to_bytes(self) -> bytes:
        """Compact binary form (the live market stores one per clearing): a small JSON
        header (sizes, reservations, diagnostics, rules of jobs without a row) and
        the (n,) / (n, m) arrays as raw little-endian bytes. Exact round trip."""
        n, m = self.shares.shape if self.shares.ndim == 2 else (0, self.diagnostics.prices.shape[0])
        kind, amount, slo, extra = self._payment_columns(n)
        state = self.to_state_header()
        state.update({"n": n, "m": m, "extra_payments": extra})
        header = json.dumps(state).encode()
        arrays = [
            self.job_ids.astype("<i8"), self.shares.astype("<f8"), self.sub_budgets.astype("<f8"), kind, amount, slo,
        ]
        return struct.pack("<I", len(header)) + header + b"".join(a.tobytes() for a in arrays)

    def _payment_columns(self, n: int) -> tuple[NDArray[np.int8], NDArray[np.float64], NDArray[np.float64], list[list[Any]]]:
        """(kind, amount, min_utility) per row and the rules of jobs without a row, as
        :meth:`to_bytes` stores them; a :class:`PaymentTable` aligned with the rows is
        stored as it is."""
        payments = self.payments
        if isinstance(payments, PaymentTable) and payments.aligned_with(self.job_ids):
            return payments.kind, payments.amount, payments.min_utility, []
        rows = {int(job): k for k, job in enumerate(self.job_ids.tolist())}
        kind = np.full(n, -1, dtype="<i1")
        amount = np.zeros(n, dtype="<f8")
        slo = np.full(n, np.nan, dtype="<f8")
        extra = []
        for job, rule in payments.items():
            k = rows.get(int(job))
            if k is None:
                extra.append([int(job), rule.kind, rule.amount, rule.min_utility])
            else:
                kind[k], amount[k] = PAYMENT_KINDS.index(rule.kind), rule.amount
                slo[k] = np.nan if rule.min_utility is None else rule.min_utility
        return kind, amount, slo, extra

    @classmethod
    def from_bytes(cls, data: bytes) -> Plan:
        """Inverse of :meth:`to_bytes`. Raises ValueError on a malformed buffer."""
        (size,) = struct.unpack_from("<I", data, 0)
        head = json.loads(data[4 : 4 + size])
        n, m = int(head["n"]), int(head["m"])
        offset = 4 + size
        parts = []
        for dtype, count in (("<i8", n), ("<f8", n * m), ("<f8", n * m), ("<i1", n), ("<f8", n), ("<f8", n)):
            array = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
            offset += array.nbytes
            parts.append(array)
        ids, shares, subs, kind, amount, slo = parts
        if offset != len(data):
            raise ValueError("plan buffer has trailing bytes")
        extra = {int(job): PaymentRule(kd, float(am), mu) for job, kd, am, mu in head["extra_payments"]}
        payments = PaymentTable(ids.astype(np.int64), kind.astype(np.int8), amount.astype(np.float64), slo.astype(np.float64), extra)
        state = dict(head, job_ids=ids.astype(np.int64), shares=shares.reshape(n, m), sub_budgets=subs.reshape(n, m), payments=[])
        plan = cls.from_state(state)
        return replace(plan, payments=payments)

    def to_state_header(self) -> dict[str, Any]:
        """The small part of :meth:`to_state`: reservations and diagnostics."""
        d = self.diagnostics
        return {
            "reservations": [r.to_list() for r in self.reservations],
            "diagnostics": {
                "mechanism": d.mechanism, "rounds": d.rounds, "converged": d.converged,
                "prices": d.prices.tolist(), "max_kkt_residual": d.max_kkt_residual,
                "outside_pool": list(d.outside_pool),
            },
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Plan:
        """Inverse of :meth:`to_state`. Raises KeyError / ValueError on a malformed state."""
        ids = np.asarray(state["job_ids"], dtype=np.int64).reshape(-1)
        d = state["diagnostics"]
        prices = np.asarray(d["prices"], dtype=np.float64).reshape(-1)
        m = prices.shape[0]
        return cls(
            job_ids=ids,
            shares=np.asarray(state["shares"], dtype=np.float64).reshape(ids.shape[0], m),
            sub_budgets=np.asarray(state["sub_budgets"], dtype=np.float64).reshape(ids.shape[0], m),
            reservations=tuple(Reservation.from_list(row) for row in state["reservations"]),
            payments={int(j): PaymentRule(k, float(a), None if mu is None else float(mu)) for j, k, a, mu in state["payments"]},
            diagnostics=Diagnostics(
                mechanism=str(d["mechanism"]), rounds=int(d["rounds"]), converged=bool(d["converged"]),
                prices=prices, max_kkt_residual=float(d["max_kkt_residual"]),
                outside_pool=tuple(int(j) for j in d.get("outside_pool", ())),
            ),
        )


def empty_plan(m: int, mechanism: str = "none") -> Plan:
    """A Plan for a market without active jobs (no shares, no reservations)."""
    return Plan(
        job_ids=np.zeros(0, dtype=np.int64),
        shares=np.zeros((0, m)),
        sub_budgets=np.zeros((0, m)),
        payments={},
        diagnostics=Diagnostics(mechanism=mechanism, rounds=0, converged=True, prices=np.zeros(m)),
    )
