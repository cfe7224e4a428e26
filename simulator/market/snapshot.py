"""The clearing's input: a market snapshot built column by column from the engine's jobs
(paper 000, Sec. 3: budgets, utility weights, demand, grouped by leaf queue, warm-started from the
last Plan's sub-budgets). ``simulator.market.engine.MarketEngine.snapshot`` gathers the rows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from scheduler.plan import Plan
from scheduler.types import MarketSnapshot
from simulator.cluster.jobs import JobState
from simulator.integrals import ShareIntegrals
from simulator.market.records import Bid, JobBooks, MarketConfig


class Columns:
    """A snapshot's rows gathered column by column: job id, leaf, bid, demand per type,
    warm-start sub-budgets (None: a new job)."""

    __slots__ = ("budgets", "demand", "head", "ids", "leaves", "slo", "subs", "utility", "weights")

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.leaves: list[int] = []
        self.budgets: list[float] = []
        self.weights: list[tuple[float, ...]] = []
        self.utility: list[str] = []
        self.slo: list[float] = []
        self.demand: list[Sequence[bool]] = []
        self.subs: list[NDArray[np.float64] | None] = []  # of the rows after ``head``'s
        self.head: NDArray[np.float64] | None = None  # the warm starts of the first rows (NaN rows: none)

    @classmethod
    def of_jobs(cls, states: Sequence[JobState], books: Mapping[int, JobBooks], rows: ShareIntegrals) -> Columns:
        """The rows of the jobs ``states`` (in that order) with their ``books`` and warm starts (``rows``,
        the engine's): what :meth:`add` gives job by job, a column at a time."""
        cols = cls()
        ids = [job.spec.job_id for job in states]
        held = [books[job_id] for job_id in ids]
        bids = [b.bid for b in held]
        cols.ids = ids
        cols.leaves = [job.spec.leaf for job in states]
        cols.budgets = [bid.budget for bid in bids]
        cols.weights = [bid.weights for bid in bids]
        cols.utility = [bid.utility for bid in bids]
        cols.slo = [math.nan if bid.min_utility is None else bid.min_utility for bid in bids]
        cols.demand = [job.demand() for job in states]
        cols.head = rows.subs(np.fromiter((b.row for b in held), dtype=np.intp, count=len(held)))[0]
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
    if warm is None:
        start = np.full((n, m), np.nan)
        first = 0 if cols.head is None else cols.head.shape[0]
        if first:
            start[:first] = cols.head
        known = [first + k for k, sub in enumerate(cols.subs) if sub is not None]
        if known:
            start[known] = [sub for sub in cols.subs if sub is not None]
    else:  # one gather from the newer Plan's rows
        position = {job: k for k, job in enumerate(warm.job_ids.tolist())}
        rows = [position.get(job, -1) for job in cols.ids]
        start = np.full((n, m), np.nan)
        have = np.flatnonzero(np.array(rows, dtype=np.int64) >= 0)
        if have.size:
            start[have] = np.asarray(warm.sub_budgets)[np.array(rows, dtype=np.int64)[have]]
    slo = cols.slo
    return MarketSnapshot(
        job_ids=np.array(cols.ids, dtype=np.int64),
        group=np.array(cols.leaves, dtype=np.int64),
        budgets=np.array(cols.budgets, dtype=np.float64),
        weights=np.array(cols.weights, dtype=np.float64).reshape(-1, m),
        utility=tuple(cols.utility),
        demand=np.array(cols.demand, dtype=np.bool_).reshape(-1, m),
        capacity=capacity,
        alpha=c.alpha, tol=c.tol, max_rounds=c.max_rounds,
        warm_start=start,
        min_utility=None if all(math.isnan(x) for x in slo) else np.array(slo, dtype=np.float64),
    )
