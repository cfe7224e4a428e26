"""The cluster model's state and what can be read from it.

:class:`ClusterCore` holds what a :class:`~simulator.cluster.model.Cluster` is
made of -- slots, jobs, fair-share allocators, the event heap, the Plan's
reservations, the fairness ledger -- with the queries on it and the small
bookkeeping steps every change of it shares. The modules that change that state
apart from the event loop take a ``ClusterCore``: reservations
(``simulator.cluster.reservations``), plan application (``plan_apply``),
configuration changes (``reconfigure``) and saved state (``state``). ``Cluster``
(``simulator.cluster.model``) adds what moves the cluster in time and delegates
to them, so the imports run one way: the model imports them, they import this
module, and none of them imports the model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.protocol import Allocator
from scheduler.plan import Reservation
from scheduler.registry import DISPATCH, FAIRSHARE, build_allocator, link_allocators
from simulator.cluster.accounting import LeafLedger
from simulator.cluster.jobs import JobState, ReportBuilder, as_capacity
from simulator.cluster.placement import LeafPlacement
from simulator.cluster.stages import DispatchStage, default_stages
from simulator.engine import EventQueue
from simulator.records import Counts, FairnessSample, TaskLaunch

EXECUTORS = ("simulated", "external")


class ClusterCore:
    """The state of a cluster: slots, jobs, fair-share allocators and a share dispatcher.

    Args:
        capacity: (m,) slots per resource type.
        tree: the queue hierarchy; jobs name a leaf by position in
            ``tree.leaves``.
        policy: fair-share policy between leaves, a name in
            ``scheduler.registry.FAIRSHARE`` ("fifo", "mlrf", "ltrf", "hltrf").
        t_wait: H-LTRF starvation timeout (s); 0 = LTRF, inf = naive.
        history, history_length: how much past usage counts ("forever",
            "rounds" of L seconds, "decay" with a half-life; paper 002 Sec. 6.2.2).
        dispatch: a name in ``scheduler.registry.DISPATCH``: "stride"
            (deterministic), "lottery" (paper 000's random draw) or "fifo"
            for choosing the job inside a leaf.
        staged: tasks of type j are eligible only once every task of the
            types before j is done (MapReduce: reduces after maps).
        seed: seed of the dispatcher's random generator (the cluster's only
            source of randomness).
        sample_interval: seconds between fairness samples (inf: none);
            samples fall at ``now + k * sample_interval``.
        now: initial clock (s).
        known_durations: tell the allocators each task's duration at start;
            False makes them estimate it (paper 002, Sec. 6.2.1).
        stages: the dispatch pipeline (default: reservations, then shared).
        executor: who runs the tasks the model starts: "simulated" (the model: a batch ends
            after its tasks' duration) or "external" (a real cluster: each start is a
            :class:`~simulator.records.TaskLaunch` in :attr:`launches`, and a batch ends when
            the caller reports it, ``Cluster.complete`` / ``Cluster.fail``).

    Raises:
        ValueError: bad capacity, sample interval, names or executor.
    """

    def __init__(
        self,
        capacity: Sequence[int],
        tree: QueueTree,
        *,
        policy: str = "hltrf",
        t_wait: float = 0.0,
        history: str = "forever",
        history_length: float = math.inf,
        dispatch: str = "stride",
        staged: bool = True,
        seed: int = 0,
        sample_interval: float = 60.0,
        now: float = 0.0,
        known_durations: bool = True,
        stages: list[DispatchStage] | None = None,
        executor: str = "simulated",
    ) -> None:
        if executor not in EXECUTORS:
            raise ValueError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
        if not sample_interval > 0:
            raise ValueError("sample_interval must be > 0 (inf for no samples)")
        FAIRSHARE.validate(policy)
        DISPATCH.validate(dispatch)
        self.tree = tree
        self.capacity = as_capacity(capacity)
        self.now = float(now)
        self.policy, self.t_wait = policy, float(t_wait)
        self.history, self.history_length = history, float(history_length)
        self.dispatch, self.staged, self.seed = dispatch, bool(staged), int(seed)
        self.sample_interval = float(sample_interval)
        self.known_durations = bool(known_durations)
        n_leaves, m = len(tree.leaves), int(self.capacity.shape[0])
        self._fraction = np.asarray(tree.leaf_fraction(), dtype=np.float64)
        self._share = self._share_matrix()
        self._allocators = fresh_allocators(self)
        self.stages: list[DispatchStage] = default_stages() if stages is None else list(stages)
        self._events = EventQueue()
        self._jobs: dict[int, JobState] = {}
        self.placement = LeafPlacement(n_leaves, m, dispatch, seed, self._shared_pending)
        self._ledger = LeafLedger(n_leaves, m, self.now)
        # pending tasks of reserved jobs, per (leaf, type): not demand for the shared stage
        self._reserved_eligible = np.zeros((n_leaves, m), dtype=np.int64)
        # the same, the shared stage's share: per type, per leaf, eligible minus reserved pending tasks
        self._shared_eligible = [[0] * n_leaves for _ in range(m)]
        self._shared_flag = [[False] * n_leaves for _ in range(m)]  # the same, > 0 (shared_flags' answer)
        self._reservations: tuple[Reservation, ...] = ()
        self._busy = [0] * m
        self._sample_origin, self._sample_k = self.now, 1
        self._next_key = 0
        self._next_seq = 0
        self._active: dict[int, JobState] = {}  # active jobs in arrival order (by seq)
        # the external executor's books (saved): batches it runs, by key ([FINISH, job, j, key, units,
        # shared, allocator key, start, expected end]), and the outboxes the caller drains
        self.executor = executor
        self._external: dict[int, list[Any]] = {}
        self.launches: list[TaskLaunch] = []
        self.kills: list[int] = []
        # the event loop's scratch (``simulator.cluster.model``), never saved: batches started
        # at the current instant and the report of the ``advance`` call under way
        self._batches: dict[tuple[int, int], list[Any]] = {}  # (job, type) -> event payload started now
        self._fresh: list[list[Any]] = []  # external batches started at this dispatch (their launches)
        self._report: ReportBuilder | None = None

    @property
    def m(self) -> int:
        """Number of resource types."""
        return int(self.capacity.shape[0])

    # ------------------------------------------------------------- queries

    def active_jobs(self) -> list[int]:
        """Ids of jobs that have arrived and not departed, in arrival order
        within each leaf, leaves in order."""
        return [jid for leaf in self.placement.leaves for jid in leaf]

    def active_states(self) -> list[JobState]:
        """The active jobs' counters in arrival order (``arrival_rank``), across leaves."""
        return list(self._active.values())

    def active_ids(self) -> list[int]:
        """The active jobs' ids, in the order of :meth:`active_states`."""
        return list(self._active)

    def next_event_time(self) -> float:
        """Time (s) of the next task completion or arrival, inf if none; a
        live clock may sleep until then (fairness samples are not events)."""
        return self._events.peek_time()

    def known_jobs(self) -> list[int]:
        """Ids of every job the cluster holds: active ones and ones submitted
        with a future ``submit_time`` that have not arrived yet."""
        return list(self._jobs)

    def idle(self) -> bool:
        """True when no job is known: none active, none waiting to arrive."""
        return not self._jobs

    def busy(self) -> list[int]:
        """(m,) slots of each type running a task now (reserved or shared)."""
        return list(self._busy)

    def job_state(self, job_id: int) -> tuple[Counts, Counts, Counts]:
        """``(pending, running, done)`` per type of a known job.

        Raises:
            KeyError: unknown or departed job.
        """
        return self._jobs[job_id].counts()

    def arrival_rank(self, job_id: int) -> int:
        """Arrival order of an active job (0 for the first). Raises KeyError."""
        return self._jobs[job_id].seq

    def job(self, job_id: int) -> JobState | None:
        """The counters of a known job (for dispatch stages), or None."""
        return self._jobs.get(job_id)

    def allocator(self, j: int) -> Allocator:
        """The fair-share allocator of resource type j."""
        return self._allocators[j]

    def shared_demanding(self, j: int) -> NDArray[np.bool_]:
        """(L,) leaves with pending tasks of type j the shared stage may start."""
        return np.array(self.shared_flags(j), dtype=np.bool_)

    def shared_flags(self, j: int) -> list[bool]:
        """:meth:`shared_demanding` as (L,) plain bools."""
        return self._shared_flag[j][:]

    def leaf_heads(self, j: int) -> NDArray[np.float64]:
        """(L,) arrival rank of each leaf's oldest shared-eligible job of type j (inf: none)."""
        return np.array(self.head_ranks(j), dtype=np.float64)

    def head_ranks(self, j: int) -> list[float]:
        """:meth:`leaf_heads` as a list."""
        jobs, placement = self._jobs, self.placement
        ranks: list[float] = []
        for leaf in range(len(placement.leaves)):
            job = placement.head(leaf, j)
            ranks.append(math.inf if job is None else jobs[job].seq)
        return ranks

    def demand_mask(self) -> dict[int, NDArray[np.bool_]]:
        """job_id -> (m,) bool, the active job has pending (eligible or not)
        or running tasks of that type; what the job bids for."""
        return {jid: np.array(self._jobs[jid].demand()) for jid in self.active_jobs()}

    def sample(self) -> FairnessSample:
        """A fairness sample at the current time (outside the periodic ones)."""
        return self._ledger.sample(self.now, self._share, self.capacity)

    # ------------------------------------------- bookkeeping every change shares

    def _integrate_to(self, t: float) -> None:
        """Close the fairness integrals at ``t`` (before counts change)."""
        self._ledger.integrate_to(t, self._share)
        self.now = max(self.now, t)

    def _share_matrix(self) -> NDArray[np.float64]:
        """(L, m) ``S_i = C_j * w_i / sum w`` (paper 002, Eq. 2)."""
        return np.outer(self._fraction, self.capacity.astype(np.float64))

    def _count_eligible(self, job: JobState, j: int, delta: int) -> None:
        """Eligible pending tasks of (job's leaf, j) changed by ``delta``."""
        self._ledger.add_eligible(job.leaf, j, delta)
        if job.reserved:
            self._reserved_eligible[job.leaf, j] += delta
        else:
            counts = self._shared_eligible[j]
            counts[job.leaf] += delta
            self._shared_flag[j][job.leaf] = counts[job.leaf] > 0

    def _count_start(self, job: JobState, j: int, units: int) -> None:
        """``units`` eligible pending tasks of (job's leaf, j) started: :meth:`_count_eligible` of
        ``-units`` and the ledger's running count up by ``units``, in one ledger step."""
        leaf = job.leaf
        self._ledger.start_units(leaf, j, units)
        if job.reserved:
            self._reserved_eligible[leaf, j] -= units
        else:
            counts = self._shared_eligible[j]
            counts[leaf] -= units
            self._shared_flag[j][leaf] = counts[leaf] > 0

    def _recount_shared(self) -> None:
        """Rebuild the shared stage's counts from the ledger (after reservations changed hands)."""
        shared = self._ledger.eligible - self._reserved_eligible
        self._shared_eligible = [[int(x) for x in shared[:, j]] for j in range(self.m)]
        self._shared_flag = [[n > 0 for n in counts] for counts in self._shared_eligible]

    def _shared_pending(self, job_id: int, j: int) -> int:
        return self._jobs[job_id].shared_pending(j, self.staged)


def fresh_allocators(c: ClusterCore) -> list[Allocator]:
    """One new allocator per resource type with the cluster's policy, ``T_wait`` and history,
    each told its type's capacity. Raises UnknownName or ValueError on a bad setting."""
    options: dict[str, Any] = {"t_wait": c.t_wait, "history": c.history, "history_length": c.history_length}
    allocators = [build_allocator(c.policy, c.tree, **options) for _ in range(c.m)]
    for allocator, cap in zip(allocators, c.capacity.tolist(), strict=True):
        allocator.capacity = float(cap)
    link_allocators(allocators)  # DRF ranks leaves by every type's usage
    return allocators
