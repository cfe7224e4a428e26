"""The market step's records: a job's bid, the market's configuration, a charge, and
what one step reports (``simulator.market.engine.MarketEngine``; README, "The engine")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from scheduler.payments import PaymentKind, PaymentRule
from scheduler.registry import DISPATCH, FAIRSHARE, MECHANISMS
from scheduler.types import UTILITY_KINDS
from simulator.records import Counts, FairnessSample, JobFinished


@dataclass(frozen=True)
class Bid:
    """The market side of a job (paper 000, Sec. 3): budget and utility.

    Attributes:
        budget: money units, > 0.
        weights: (m,) utility weights w_ij >= 0.
        utility: "linear" or "log".
        min_utility: the job's SLO (paper 000, Sec. 6), or None.

    Raises:
        ValueError: non-positive budget, negative weights, unknown utility.
    """

    budget: float
    weights: tuple[float, ...]
    utility: str = "linear"
    min_utility: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.budget) and self.budget > 0):
            raise ValueError("a bid's budget must be finite and > 0")
        if any(not (math.isfinite(w) and w >= 0) for w in self.weights):
            raise ValueError("utility weights must be finite and >= 0")
        if self.utility not in UTILITY_KINDS:
            raise ValueError(f"unknown utility {self.utility!r}; use one of {UTILITY_KINDS}")


@dataclass(frozen=True)
class MarketConfig:
    """The stages and parameters of a market (names from ``scheduler.registry``).

    Attributes:
        mechanism: within a queue (``MECHANISMS``: "abacus", ...).
        fairshare: across queues (``FAIRSHARE``: "fifo", "mlrf", "ltrf", "hltrf").
        dispatch: inside a leaf (``DISPATCH``: "stride", "lottery", "fifo").
        alpha, tol, max_rounds: the auction's exponent, relative tolerance and
            round cap (paper 000, Sec. 3).
        t_wait: H-LTRF starvation timeout, simulated seconds (paper 002, Sec. 5.2.2).
        history, history_length: how much past usage the fair share remembers
            ("forever", "rounds" of L s, "decay" with a half-life; Sec. 6.2.2).

    Raises:
        UnknownName: a stage name no registry holds.
    """

    mechanism: str = "abacus"
    fairshare: str = "hltrf"
    dispatch: str = "stride"
    alpha: float = 0.5
    tol: float = 1e-6
    max_rounds: int = 1000
    t_wait: float = 0.0
    history: str = "forever"
    history_length: float = math.inf

    def __post_init__(self) -> None:
        MECHANISMS.validate(self.mechanism)
        FAIRSHARE.validate(self.fairshare)
        DISPATCH.validate(self.dispatch)


@dataclass(frozen=True)
class Charge:
    """Money a job owes under its payment rule (money units, > 0).

    Attributes:
        job_id: the job.
        amount: what to charge from its hold.
        kind: the rule's kind (``scheduler.payments.PaymentRule.kind``).
        time: simulated seconds at which it became due.
    """

    job_id: int
    amount: float
    kind: PaymentKind
    time: float


@dataclass(frozen=True)
class StepReport:
    """What one :meth:`MarketEngine.step` did.

    Attributes:
        now: simulated seconds after the step.
        departures: completed jobs in time order.
        charges: what the departures owe (zero amounts are left out).
        settled: ids of every departed job (charged or not): their holds can
            be released.
        samples: fairness samples taken.
        progress: job id -> (pending, running, done) per type, for jobs whose
            counts changed.
        started_tasks, finished_tasks: task starts and completions.
        first_starts: job id -> simulated time its first task started, for
            jobs that started during the step.
        achieved_utility: job id -> utility of its average shares at departure,
            for departed SLO jobs (paper 000, Sec. 6: what ``settle`` compared
            with the SLO).
        average_shares: job id -> (m,) its average job resource at departure
            (paper 000, Sec. 5, Def. 1), for every departed job.
        settled_rules: job id -> the kind of the payment rule it was settled by
            (``scheduler.payments.PaymentRule.kind``), for every departed job: whether
            it paid the auction's way or a price fixed at acceptance.
    """

    now: float
    departures: list[JobFinished]
    charges: list[Charge]
    settled: list[int]
    samples: list[FairnessSample]
    progress: dict[int, tuple[Counts, Counts, Counts]]
    started_tasks: int
    finished_tasks: int
    first_starts: dict[int, float] = field(default_factory=dict)
    achieved_utility: dict[int, float] = field(default_factory=dict)
    average_shares: dict[int, NDArray[np.float64]] = field(default_factory=dict)
    settled_rules: dict[int, PaymentKind] = field(default_factory=dict)

    @classmethod
    def idle(cls, now: float) -> StepReport:
        """A report of nothing happening at ``now``."""
        return cls(now, [], [], [], [], {}, 0, 0)


@dataclass
class JobBooks:
    """The engine's per-job market records (``simulator.market.engine``): bid, rule in force, and the row of
    its share integral and warm start in the engine's :class:`~simulator.integrals.ShareIntegrals`."""

    bid: Bid
    rule: PaymentRule
    arrival: float
    row: int
    accepted: bool = False  # a fixed price was charged


@dataclass(frozen=True)
class ShareTable:
    """The shares in force, one row a job (``MarketEngine.share_table``).

    Attributes:
        ids: (n,) int64 job ids.
        arrival: (n,) simulated seconds each job arrived.
        shares: (n, m) float64 each job's share of each resource type in force.
    """

    ids: NDArray[np.int64]
    arrival: NDArray[np.float64]
    shares: NDArray[np.float64]
