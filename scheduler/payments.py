"""What jobs pay, and when: the payment rule of one job, the table of a Plan's rules, and the settlement
at departure (README, "The engine"; paper 000 Secs. 3 and 6: the Abacus budget, charged at completion or
only if the SLO is met; paper 001 Sec. 3.1 Alg. 1 line 9: ERA's price fixed at acceptance).

A :class:`~scheduler.plan.Plan` carries one :class:`PaymentRule` per job, as a :class:`PaymentTable`
(arrays, one row per job); :func:`settle` turns a rule into the amount owed when the job departs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from scheduler.types import MarketSnapshot

PaymentKind = Literal["at_completion", "if_slo_met", "fixed"]
PAYMENT_KINDS: tuple[str, ...] = ("at_completion", "if_slo_met", "fixed")
_FIXED = PAYMENT_KINDS.index("fixed")
_AT_COMPLETION = PAYMENT_KINDS.index("at_completion")  # 0: PaymentTable.at_completion_rows' zeros
_PLAIN_ROWS = 64  # PaymentTable.visit_rows compares tables of up to this many rows in plain Python


@dataclass(frozen=True)
class PaymentRule:
    """What a job pays, and when (README, "The engine"; paper 000 Secs. 3 and 6; paper 001 Sec. 3.1).

    Attributes:
        kind: ``"at_completion"`` -- ``amount`` is charged when the job
            completes (nothing if cancelled); ``"if_slo_met"`` -- ``amount``
            is charged at completion only if the job's achieved utility is at
            least ``min_utility``; ``"fixed"`` -- ``amount`` is due at
            acceptance (when a Plan first carries the rule), whatever happens
            later.
        amount: money units, finite and >= 0.
        min_utility: the SLO of an ``if_slo_met`` rule (utility units of the
            job's utility function); None otherwise.

    Raises:
        ValueError: unknown kind, negative or non-finite amount, or a
            missing / superfluous ``min_utility``.
    """

    kind: PaymentKind
    amount: float
    min_utility: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in PAYMENT_KINDS:
            raise ValueError(f"unknown payment kind {self.kind!r}; use one of {PAYMENT_KINDS}")
        if not (math.isfinite(self.amount) and self.amount >= 0):
            raise ValueError("a payment amount must be finite and >= 0")
        if (self.kind == "if_slo_met") != (self.min_utility is not None):
            raise ValueError("min_utility is required by, and only by, an if_slo_met rule")

    @classmethod
    def at_completion(cls, amount: float) -> PaymentRule:
        """The budget, charged when the job completes (paper 000, Sec. 3)."""
        return cls("at_completion", float(amount))

    @classmethod
    def if_slo_met(cls, amount: float, min_utility: float) -> PaymentRule:
        """``amount`` charged at completion only if the SLO was met (paper 000, Sec. 6)."""
        return cls("if_slo_met", float(amount), float(min_utility))

    @classmethod
    def fixed(cls, amount: float) -> PaymentRule:
        """A price fixed at acceptance (ERA, paper 001, Alg. 1)."""
        return cls("fixed", float(amount))

    @property
    def due_at_acceptance(self) -> bool:
        """True when the amount is owed as soon as the rule is first applied."""
        return self.kind == "fixed"


def settle(rule: PaymentRule, *, completed: bool, achieved_utility: float | None = None) -> float:
    """The amount a departing job pays under ``rule`` (money units, >= 0).

    Args:
        rule: the job's payment rule.
        completed: True for a completion, False for a cancellation.
        achieved_utility: the job's utility at its time-averaged shares
            (paper 000, Sec. 5 "average job resource"); needed by
            ``if_slo_met`` (None counts as not met).

    A ``fixed`` rule was settled at acceptance, so it owes nothing more here.
    """
    if rule.kind == "fixed" or not completed:
        return 0.0
    if rule.kind == "if_slo_met":
        met = achieved_utility is not None and rule.min_utility is not None and achieved_utility >= rule.min_utility
        return rule.amount if met else 0.0
    return rule.amount


class PaymentTable(Mapping[int, PaymentRule]):
    """job id -> :class:`PaymentRule` as arrays, one row per job of a Plan (plus rules of jobs
    without a row), each rule built when it is read.

    What a clearing of n jobs decides and stores without building n rule objects: the rules
    of the auction (:func:`budget_payments`) and of a decoded Plan (:meth:`Plan.from_bytes`)
    are tables; a Plan may still carry a plain dict. Iteration order: the rows in order, then
    ``extra``, as the dict the table stands for.

    Args:
        ids: (n,) job ids, distinct.
        kind: (n,) index into :data:`PAYMENT_KINDS`, -1 for a row without a rule.
        amount: (n,) money units, finite and >= 0 where there is a rule.
        min_utility: (n,) the SLO of ``if_slo_met`` rows, NaN elsewhere.
        extra: rules of jobs that have no row.

    Raises:
        ValueError: as :class:`PaymentRule` for any row, or arrays of different lengths.
    """

    __slots__ = ("_columns", "_index", "_rows", "amount", "extra", "ids", "kind", "min_utility")

    def __init__(self, ids: NDArray[np.int64], kind: NDArray[np.int8], amount: NDArray[np.float64],
                 min_utility: NDArray[np.float64], extra: Mapping[int, PaymentRule] | None = None) -> None:
        self.ids, self.kind, self.amount, self.min_utility = ids, kind, amount, min_utility
        self.extra: Mapping[int, PaymentRule] = extra or {}
        if not ids.shape == kind.shape == amount.shape == min_utility.shape:
            raise ValueError("a payment table's arrays must have one row per job")
        ruled = kind >= 0
        if np.any(kind >= len(PAYMENT_KINDS)):
            raise ValueError(f"unknown payment kind; use one of {PAYMENT_KINDS}")
        if not np.all(np.isfinite(amount[ruled]) & (amount[ruled] >= 0)):
            raise ValueError("a payment amount must be finite and >= 0")
        if not np.array_equal((kind == PAYMENT_KINDS.index("if_slo_met"))[ruled], ~np.isnan(min_utility[ruled])):
            raise ValueError("min_utility is required by, and only by, an if_slo_met rule")
        self._rows: list[tuple[int, str, float, float | None]] | None = None
        self._index: dict[int, int] | None = None
        self._columns: tuple[list[int], list[int], list[float], list[float]] | None = None

    @classmethod
    def at_completion_rows(cls, job_ids: NDArray[np.int64], budgets: NDArray[np.float64]) -> PaymentTable | None:
        """The table of (n,) ``job_ids`` each paying its budget (n,) at completion, without an SLO (paper 000,
        Sec. 3): the arrays the constructor takes for those rules (kind 0, NaN SLOs; copies of ``job_ids``
        and ``budgets``), checked on the budgets as floats only (kinds and SLOs agree by construction), its
        :meth:`columns` filled on the way. None where a budget is not a finite float >= 0 (the constructor
        raises there) or the arrays are not (n,)."""
        ids = np.array(job_ids, dtype=np.int64)
        amount = np.array(budgets, dtype=np.float64)
        if ids.ndim != 1 or amount.shape != ids.shape:
            return None
        amounts: list[float] = amount.tolist()
        if not all(0.0 <= a < math.inf for a in amounts):  # NaN fails both comparisons
            return None
        n = len(amounts)
        table = cls.__new__(cls)
        table.ids, table.kind, table.amount = ids, np.zeros(n, dtype=np.int8), amount  # _AT_COMPLETION == 0
        table.min_utility, table.extra = np.full(n, np.nan), {}
        table._rows, table._index = None, None
        table._columns = (ids.tolist(), [_AT_COMPLETION] * n, amounts, [math.nan] * n)
        return table

    def columns(self) -> tuple[list[int], list[int], list[float], list[float]]:
        """(ids, kind, amount, min_utility) as lists (built once)."""
        if self._columns is None:
            self._columns = (self.ids.tolist(), self.kind.tolist(), self.amount.tolist(), self.min_utility.tolist())
        return self._columns

    def raw_items(self) -> list[tuple[int, str, float, float | None]]:
        """(job id, kind, amount, min_utility) of every rule, in iteration order, without
        building rule objects (the engine compares them with the rules it holds)."""
        if self._rows is None:
            ids, kinds, amounts = self.ids.tolist(), self.kind.tolist(), self.amount.tolist()
            slo = self.min_utility.tolist()
            self._rows = [(job, PAYMENT_KINDS[k], a, None if u != u else u)  # u != u: NaN, no SLO
                          for job, k, a, u in zip(ids, kinds, amounts, slo, strict=True) if k >= 0]
            self._rows += [(job, r.kind, r.amount, r.min_utility) for job, r in self.extra.items()]
        return self._rows

    def rows_at(self, positions: NDArray[np.intp]) -> list[tuple[int, str, float, float | None]]:
        """:meth:`raw_items`' entries of the table rows at ``positions`` (ascending; rows without a
        rule left out), in that order."""
        kinds = self.kind[positions]
        positions = positions[kinds >= 0]
        return [(job, PAYMENT_KINDS[k], a, None if u != u else u) for job, k, a, u in zip(
            self.ids[positions].tolist(), kinds[kinds >= 0].tolist(), self.amount[positions].tolist(),
            self.min_utility[positions].tolist(), strict=True)]

    def changed_rows(self, previous: PaymentTable) -> NDArray[np.intp]:
        """Positions (ascending) of the rows with a rule that ``previous`` does not give the same
        job: a new job, or another kind, amount or SLO. Only for tables without ``extra``.

        Raises:
            ValueError: either table has ``extra`` rules.
        """
        if self.extra or previous.extra:
            raise ValueError("changed_rows compares the tables' arrays only (no extra rules)")
        ruled = self.kind >= 0
        if previous.ids.size == 0:
            return np.flatnonzero(ruled)
        order = np.argsort(previous.ids, kind="stable")
        known = previous.ids[order]
        at = np.minimum(np.searchsorted(known, self.ids), known.size - 1)
        before = order[at]
        mu, old_mu = self.min_utility, previous.min_utility[before]
        same = ((known[at] == self.ids) & (previous.kind[before] == self.kind) & (previous.amount[before] == self.amount)
                & ((mu == old_mu) | (np.isnan(mu) & np.isnan(old_mu))))
        return np.flatnonzero(ruled & ~same)

    def visit_rows(self, previous: PaymentTable, touched: Set[int]) -> list[tuple[int, str, float, float | None]]:
        """:meth:`raw_items`' entries, in row order, of the rows a holder of ``previous``'s rules must
        read again: the rows :meth:`changed_rows` gives, the ``fixed`` rows with an amount > 0 (the
        price may still be due) and the rows of the jobs in ``touched`` (whose rule was set outside a
        table). :meth:`rows_at` of those positions; compared in plain Python when both tables have at
        most ``_PLAIN_ROWS`` rows (numpy's calls cost more than the comparisons there).

        Raises:
            ValueError: either table has ``extra`` rules.
        """
        if self.extra or previous.extra:
            raise ValueError("visit_rows compares the tables' arrays only (no extra rules)")
        if self.ids.shape[0] > _PLAIN_ROWS or previous.ids.shape[0] > _PLAIN_ROWS:
            return self.visit_rows_arrays(previous, touched)
        before = {job: (k, a, u) for job, k, a, u in zip(*previous.columns(), strict=True)}
        out = []
        for job, k, a, u in zip(*self.columns(), strict=True):
            if k < 0:
                continue
            old = before.get(job)
            if (old is None or old[0] != k or old[1] != a or not (old[2] == u or (old[2] != old[2] and u != u))
                    or (k == _FIXED and a > 0) or job in touched):  # u != u: NaN, no SLO
                out.append((job, PAYMENT_KINDS[k], a, None if u != u else u))
        return out

    def visit_rows_arrays(self, previous: PaymentTable, touched: Set[int]) -> list[tuple[int, str, float, float | None]]:
        """:meth:`visit_rows` through numpy, whatever the tables' sizes."""
        visit = [self.changed_rows(previous), np.flatnonzero((self.kind == _FIXED) & (self.amount > 0))]
        if touched:  # np.isin's positions, by set lookups
            visit.append(np.array([k for k, job in enumerate(self.ids.tolist()) if job in touched], dtype=np.intp))
        return self.rows_at(np.unique(np.concatenate(visit)))

    def __getitem__(self, job: int) -> PaymentRule:
        if self._index is None:
            self._index = {row[0]: k for k, row in enumerate(self.raw_items())}
        _, kind, amount, mu = self.raw_items()[self._index[job]]
        return PaymentRule(kind, amount, mu)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[int]:
        return (row[0] for row in self.raw_items())

    def __len__(self) -> int:
        return len(self.raw_items())

    def aligned_with(self, job_ids: NDArray[np.int64]) -> bool:
        """True when the table has exactly one row per job of ``job_ids``, in that order, and no extra."""
        return not self.extra and np.array_equal(self.ids, job_ids)


def budget_payment(budget: float, min_utility: float | None = None) -> PaymentRule:
    """A bid's rule: its budget at completion (paper 000, Sec. 3), or only if its
    SLO ``min_utility`` is met (Sec. 6). Also the rule of a job no Plan has
    covered yet."""
    if min_utility is not None and math.isfinite(min_utility):
        return PaymentRule.if_slo_met(budget, min_utility)
    return PaymentRule.at_completion(budget)


def budget_payments(snapshot: MarketSnapshot) -> PaymentTable:
    """:func:`budget_payment` for every job of the snapshot, as a :class:`PaymentTable`
    (one row per job, in the snapshot's order): the budget at completion, or only if the
    job's SLO is met where it has a finite one (paper 000, Secs. 3 and 6).

    A snapshot without SLOs (the common clearing) builds its table from the budgets alone:
    every row ``at_completion`` with no SLO, so the only check left is the amounts' (finite,
    >= 0), made on the budgets as floats (:meth:`PaymentTable.at_completion_rows`). The arrays are those the
    general path builds, bit for bit. Raises ValueError as :class:`PaymentTable`.
    """
    n = snapshot.job_ids.shape[0]
    if snapshot.min_utility is None and n <= _PLAIN_ROWS:
        table = PaymentTable.at_completion_rows(snapshot.job_ids, snapshot.budgets)
        if table is not None:
            return table
    slo = np.full(n, np.nan) if snapshot.min_utility is None else np.asarray(snapshot.min_utility, dtype=np.float64)
    has_slo = np.isfinite(slo)
    kind = np.where(has_slo, PAYMENT_KINDS.index("if_slo_met"), PAYMENT_KINDS.index("at_completion")).astype(np.int8)
    return PaymentTable(np.array(snapshot.job_ids, dtype=np.int64), kind, np.array(snapshot.budgets, dtype=np.float64),
                        np.where(has_slo, slo, np.nan))
