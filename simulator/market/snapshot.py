"""The clearing's input: a market snapshot built column by column from the engine's jobs
(paper 000, Sec. 3: budgets, utility weights, demand, grouped by leaf queue, warm-started from the
last Plan's sub-budgets). ``simulator.market.engine.MarketEngine.snapshot`` gathers the rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain

import numpy as np
from numpy.typing import NDArray

from scheduler.plan import Plan
from scheduler.types import MarketSnapshot
from simulator.cluster.jobs import JobState
from simulator.integrals import ShareIntegrals
from simulator.market.records import Bid, MarketConfig


class BidColumns:
    """The engine's bids as columns, one row a job: the row of its ``JobBooks`` (the rows of
    ``simulator.integrals.ShareIntegrals``), so a snapshot gathers budgets, utility weights and
    kinds and SLOs (paper 000, Sec. 3 and 6) by index instead of reading every bid.

    Args:
        m: resource types (the weights' length).
    """

    __slots__ = ("_budget", "_slo", "_utility", "_weights", "m", "row_of")

    def __init__(self, m: int) -> None:
        self.m = m
        self.row_of: dict[int, int] = {}  # job id -> row
        self._budget = np.zeros(0)
        self._weights = np.zeros((0, m))
        self._slo = np.zeros(0)  # NaN: no SLO
        self._utility: list[str] = []

    def put(self, job_id: int, row: int, bid: Bid) -> None:
        """``bid`` becomes job ``job_id``'s, at ``row``.

        Raises:
            ValueError: weights of other than ``m`` entries.
        """
        if len(bid.weights) != self.m:
            raise ValueError(f"job {job_id}: weights need {self.m} entries")
        if row >= self._budget.shape[0]:
            self._grow(row + 1)
        self._budget[row] = bid.budget
        self._weights[row] = bid.weights
        self._slo[row] = math.nan if bid.min_utility is None else bid.min_utility
        self._utility[row] = bid.utility
        self.row_of[job_id] = row

    def drop(self, job_id: int) -> None:
        """Forget a departed or cancelled job (its row is reused by a later :meth:`put`)."""
        self.row_of.pop(job_id, None)

    def rows(self, job_ids: Sequence[int]) -> NDArray[np.intp]:
        """(k,) the rows of ``job_ids``; raises KeyError for a job without a bid."""
        return np.fromiter(map(self.row_of.__getitem__, job_ids), dtype=np.intp, count=len(job_ids))

    def take(self, rows: NDArray[np.intp]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], list[str]]:
        """(budgets (k,), weights (k, m), SLOs (k,) NaN for none, utility kinds) of ``rows``."""
        return self._budget[rows], self._weights[rows], self._slo[rows], list(map(self._utility.__getitem__, rows.tolist()))

    def _grow(self, size: int) -> None:
        size = max(size, 2 * self._budget.shape[0], 16)
        extra = size - self._budget.shape[0]
        self._budget = np.concatenate([self._budget, np.zeros(extra)])
        self._weights = np.concatenate([self._weights, np.zeros((extra, self.m))])
        self._slo = np.concatenate([self._slo, np.full(extra, math.nan)])
        self._utility.extend(["linear"] * extra)


class Columns:
    """A snapshot's rows gathered column by column: job id, leaf, bid, demand per type,
    warm-start sub-budgets (None: a new job). The first rows' bids (``bids``, from
    :meth:`of_jobs`) are arrays; the rows :meth:`add` appends after them are lists."""

    __slots__ = ("bids", "budgets", "demand", "head", "ids", "leaves", "slo", "subs", "utility", "weights")

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.leaves: list[int] = []
        self.bids: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], list[str]] | None = None
        self.budgets: list[float] = []  # of the rows after ``bids``'
        self.weights: list[tuple[float, ...]] = []
        self.utility: list[str] = []
        self.slo: list[float] = []
        self.demand: list[Sequence[bool]] = []
        self.subs: list[NDArray[np.float64] | None] = []  # of the rows after ``head``'s
        self.head: NDArray[np.float64] | None = None  # the warm starts of the first rows (NaN rows: none)

    @classmethod
    def of_jobs(cls, states: Sequence[JobState], ids: list[int], bids: BidColumns, rows: ShareIntegrals) -> Columns:
        """The rows of the jobs ``states`` (in that order; ``ids``: their ids) with their bids (``bids``)
        and warm starts (``rows``, the engine's): what :meth:`add` gives job by job, gathered by row."""
        cols = cls()
        index = bids.rows(ids)
        cols.ids = ids
        cols.leaves = [job.leaf for job in states]
        cols.demand = [job.demand() for job in states]
        cols.bids = bids.take(index)
        cols.head = rows.subs(index)[0]
        return cols

    def add(self, job_id: int, leaf: int, bid: Bid, demand: Sequence[bool], sub: NDArray[np.float64] | None) -> None:
        self.ids.append(job_id)
        self.leaves.append(leaf)
        self.budgets.append(bid.budget)
        self.weights.append(bid.weights)
        self.utility.append(bid.utility)
        self.slo.append(math.nan if bid.min_utility is None else bid.min_utility)
        self.demand.append(demand)
        self.subs.append(sub)


def build_snapshot(cols: Columns, warm: Plan | None, c: MarketConfig, capacity: NDArray[np.float64]) -> MarketSnapshot:
    """The snapshot of the rows gathered in ``cols``; warm-started from ``warm``'s
    sub-budgets where it has the job (a newer Plan than the one applied), else from
    each job's own (NaN rows: new jobs); at the parameters ``c``, selling ``capacity`` (m,) units
    of each type (paper 000, Sec. 3)."""
    m, n = int(capacity.shape[0]), len(cols.ids)
    ids = np.array(cols.ids, dtype=np.int64)
    if warm is None and not cols.subs and cols.head is not None and cols.head.shape == (n, m):
        start = cols.head  # every row's own warm start: a gathered copy (``Columns.of_jobs``)
    elif warm is None:
        start = np.full((n, m), np.nan)
        first = 0 if cols.head is None else cols.head.shape[0]
        if first:
            start[:first] = cols.head
        known = [first + k for k, sub in enumerate(cols.subs) if sub is not None]
        if known:
            start[known] = [sub for sub in cols.subs if sub is not None]
    elif _leads(warm.job_ids, ids, cols.ids):  # the newer Plan's rows are the first rows (no departure since)
        start = np.full((n, m), np.nan)
        start[:warm.job_ids.shape[0]] = np.asarray(warm.sub_budgets)
    else:  # one gather from the newer Plan's rows
        position = {job: k for k, job in enumerate(warm.job_ids.tolist())}
        rows = [position.get(job, -1) for job in cols.ids]
        start = np.full((n, m), np.nan)
        have = np.flatnonzero(np.array(rows, dtype=np.int64) >= 0)
        if have.size:
            start[have] = np.asarray(warm.sub_budgets)[np.array(rows, dtype=np.int64)[have]]
    if cols.bids is not None and not cols.budgets:  # every row's bid gathered as arrays (no rows added)
        budgets, weights, slo, utility = cols.bids
    else:
        budgets, weights, slo, utility = _bid_arrays(cols, m)
    return MarketSnapshot(
        job_ids=ids,
        group=np.array(cols.leaves, dtype=np.int64),
        budgets=budgets,
        weights=weights,
        utility=tuple(utility),
        demand=_demand(cols.demand, n, m),
        capacity=capacity,
        alpha=c.alpha, tol=c.tol, max_rounds=c.max_rounds,
        warm_start=start,
        min_utility=None if _all_nan(slo) else slo,
    )


def _all_nan(values: NDArray[np.float64]) -> bool:
    """``bool(np.isnan(values).all())`` for the (n,) SLOs: no job has one (paper 000, Sec. 6), read as floats
    for a short array (numpy's calls cost more there)."""
    if values.shape[0] <= 64:
        return all(v != v for v in values.tolist())  # v != v: NaN
    return bool(np.isnan(values).all())


def _bid_arrays(cols: Columns, m: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], list[str]]:
    """(budgets (n,), weights (n, m), SLOs (n,) NaN for none, utility kinds) of every row of ``cols``:
    the gathered first rows' (``cols.bids``), then the rows :meth:`Columns.add` appended."""
    budgets = np.array(cols.budgets, dtype=np.float64)
    weights = np.array(cols.weights, dtype=np.float64).reshape(-1, m)
    slo = np.array(cols.slo, dtype=np.float64)
    utility = cols.utility
    if cols.bids is not None:  # the first rows' bids, gathered as arrays
        first_budgets, first_weights, first_slo, first_utility = cols.bids
        budgets = np.concatenate([first_budgets, budgets]) if budgets.size else first_budgets
        weights = np.concatenate([first_weights, weights]) if weights.size else first_weights
        slo = np.concatenate([first_slo, slo]) if slo.size else first_slo
        utility = first_utility + utility
    return budgets, weights, slo, utility


def _leads(plan_ids: NDArray[np.int64], ids: NDArray[np.int64], listed: list[int]) -> bool:
    """Whether ``plan_ids`` are the first of ``ids`` (``listed``: the same, as a list) and no id
    repeats: then each row's warm start is the Plan row of the same index, or none."""
    k = plan_ids.shape[0]
    return k <= ids.shape[0] and bool(np.array_equal(plan_ids, ids[:k])) and len(set(listed)) == len(listed)


def _demand(rows: Sequence[Sequence[bool]], n: int, m: int) -> NDArray[np.bool_]:
    """(n, m) the rows of demand flags as one array (read as one flat run when every row has m)."""
    if set(map(len, rows)) <= {m}:
        return np.fromiter(chain.from_iterable(rows), dtype=np.bool_, count=n * m).reshape(n, m)
    return np.array(rows, dtype=np.bool_).reshape(-1, m)
