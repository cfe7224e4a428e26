"""Karma: credit-based allocation over quanta (Vuppalapati, Fikioris, Agarwal, Cidon, Khandelwal, Tardos; OSDI'23).

Time runs in quanta. Each of n users has a fair share ``f = C / n`` (here
``C * w_i / sum w``) of which ``alpha * f`` is *guaranteed*; the other
``(1 - alpha) * f`` of every user forms the *shared* slices. Every quantum
(Sec. 3, "Karma algorithm"; the authors' library, resource-disaggregation/karma
``algorithm/src/karma_allocator.cpp``, ``allocate``):

1. every user receives ``(1 - alpha) * f`` free credits;
2. every user gets ``min(demand, guaranteed)``; a user demanding less
   *donates* the rest, a user demanding more is a *borrower*, wanting at most
   as many slices as it has credits;
3. if the supply (donated plus shared slices) covers what the borrowers want,
   each gets it and pays one credit per slice, and the donated slices that
   were borrowed earn one credit each, the *poorest donors first* (donated
   slices before shared ones);
4. otherwise every donated slice earns its donor a credit and the slices go
   to the *richest borrowers first*, one credit per slice.

Over time a user that lent while others were busy is repaid when it is busy
-- long-term fairness that max-min fairness lacks (Sec. 2), with Pareto
efficiency and online strategy-proofness (Sec. 4).

* :func:`karma_quantum` -- one quantum of that algorithm on integer slices (the
  worked example of 3 users, 18 slices, ``alpha = 0.5``: demands A 6,12,0,6,6,
  B 6,0,12,6,6, C 0,0,0,18,12 give each user 24 slices in total where max-min
  gives A and B 30 and C 12).
* :class:`KarmaAllocator` -- Karma as a fair-share-stage policy of the cluster,
  whose tasks cannot be taken back within a quantum: a free unit goes to a
  demanding leaf below its guaranteed share (the fewest units held per unit of
  guarantee first), else to the *richest borrower*, its credits minus the
  slices it is borrowing now (step 4's order). At the end of each quantum the
  leaves' *realised* average allocation is settled as in steps 1-4: units above
  the guarantee cost a credit per quantum, units below it are donations, and
  the borrowed donations earn credits poorest donors first.

Deviations of the adapter: the cluster is work conserving, so a borrower is
never refused for lack of credits; credits therefore start at 0 and may go
negative -- the same ranking as the library's default of (practically)
unlimited initial credits, shifted by a constant. Demand is observed as "has
pending tasks" (the stage's interface), not as a slice count, so the library's
tie order (least remaining want first) cannot be read here: leaves tied on
the ranking take turns instead, the first tied leaf after the one served last
(cyclically), so equal credits -- every credit starts equal -- do not always
favour the first leaf.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.selection import TIE_RTOL, argmin_first
from scheduler.published.base import BatchBook

ALPHA = 0.5  # the guaranteed fraction of the fair share (paper and library default example)
QUANTUM_S = 60.0


def _one_by_one(pool: NDArray[np.float64], room: NDArray[np.int64], count: int, richest: bool) -> NDArray[np.int64]:
    """Hand ``count`` slices one at a time to the entry with the lowest (``richest``: highest)
    current ``pool`` value and room left, the pool moving by one per slice. Among equal pool
    values the entry with the least room left goes first, then the lower index: the library's
    order (``borrow_from_poorest_fast`` / ``give_to_richest_fast`` keep the tied users in a heap
    ordered by their remaining donation or want, and a last partial round pops its smallest)."""
    taken = np.zeros(room.size, dtype=np.int64)
    level = pool.astype(np.float64).copy()
    for _ in range(count):
        open_ = taken < room
        if not open_.any():
            break
        key = -level if richest else level
        best = float(key[open_].min())
        tied = open_ & (key <= best + TIE_RTOL * max(1.0, abs(best)))
        i = argmin_first((room - taken).astype(np.float64), tied)
        taken[i] += 1
        level[i] += -1.0 if richest else 1.0
    return taken


def karma_quantum(
    demands: ArrayLike, credits: ArrayLike, guaranteed: ArrayLike, shared: int, free_credits: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """One Karma quantum on integer slices (module docstring, steps 1-4).

    Args:
        demands: (n,) slices each user wants this quantum, >= 0.
        credits: (n,) credits before the quantum.
        guaranteed: (n,) guaranteed slices ``alpha * f``, >= 0.
        shared: the shared slices ``sum (1 - alpha) * f``, >= 0.
        free_credits: (n,) credits each user receives this quantum.

    Returns:
        ``(allocation (n,), credits after the quantum (n,))``.

    Raises:
        ValueError: shapes differ or a count is negative.
    """
    d, c0 = np.asarray(demands, dtype=np.int64), np.asarray(credits, dtype=np.float64)
    g, free = np.asarray(guaranteed, dtype=np.int64), np.asarray(free_credits, dtype=np.float64)
    if not d.shape == c0.shape == g.shape == free.shape or (d < 0).any() or (g < 0).any() or shared < 0:
        raise ValueError("demands, credits, guaranteed and free_credits must be (n,) and counts >= 0")
    c = c0 + free
    alloc = np.minimum(d, g)
    donated = np.maximum(g - d, 0)
    want = np.minimum(np.maximum(d - g, 0), np.floor(np.maximum(c, 0.0)).astype(np.int64))
    supply = int(donated.sum()) + int(shared)
    if supply >= int(want.sum()):
        alloc += want
        c -= want
        c += _one_by_one(c, donated, int(want.sum()), richest=False)  # poorest donors earn first
    else:
        c += donated  # every donated slice is borrowed
        got = _one_by_one(c, want, supply, richest=True)  # richest borrowers first
        alloc += got
        c -= got
    return alloc, c


def water_fill(credits: NDArray[np.float64], room: NDArray[np.float64], amount: float) -> NDArray[np.float64]:
    """(n,) earnings: ``amount`` spread over the entries raising the lowest credits first
    (continuous poorest-first, step 3), entry i earning at most ``room[i]``."""
    total = float(room.sum())
    if amount <= 0 or total <= 0:
        return np.zeros_like(credits)
    if amount >= total:
        return room.copy()
    lo, hi = float(credits.min()), float(credits.max()) + amount
    for _ in range(100):  # bisection on the water level
        mid = 0.5 * (lo + hi)
        if float(np.minimum(np.maximum(mid - credits, 0.0), room).sum()) < amount:
            lo = mid
        else:
            hi = mid
    out: NDArray[np.float64] = np.minimum(np.maximum(hi - credits, 0.0), room)
    return out * (amount / float(out.sum()))


class KarmaAllocator(BatchBook):
    """Karma across leaf queues for ONE resource type (module docstring: the adapter).

    Args:
        tree: users (leaves) and their weights.
        alpha: guaranteed fraction of the fair share, in [0, 1].
        quantum: quantum length, seconds (> 0).

    ``t_wait`` and the history settings are kept but unused (credits are Karma's memory).
    """

    policy = "karma"

    def __init__(
        self, tree: QueueTree, *, t_wait: float = 0.0, history: str = "forever", history_length: float = math.inf,
        alpha: float = ALPHA, quantum: float = QUANTUM_S,
    ) -> None:
        if not 0.0 <= alpha <= 1.0 or not (math.isfinite(quantum) and quantum > 0):
            raise ValueError("alpha must be in [0, 1] and quantum finite and > 0")
        super().__init__(tree, t_wait=t_wait, history=history, history_length=history_length)
        self.alpha, self.quantum = float(alpha), float(quantum)
        n = len(tree.leaves)
        self._credits = np.zeros(n)
        self._used = np.zeros(n)  # unit-seconds in the current quantum
        self._q_start = -math.inf
        self._turn = -1  # the leaf served last (ties rotate from the next one)

    def credits(self) -> NDArray[np.float64]:
        """(L,) credits now (the current quantum's free credits included, its exchange not yet)."""
        return self._credits.copy()

    def fair_share(self) -> NDArray[np.float64]:
        """(L,) fair share f per leaf, units (0 while the capacity is unknown)."""
        cap = self.capacity if math.isfinite(self.capacity) else 0.0
        out: NDArray[np.float64] = cap * self._frac
        return out

    def _on_time(self, before: float, now: float) -> None:
        q = self.quantum
        if math.isinf(self._q_start):
            self._q_start = math.floor(now / q) * q
            self._credits += (1.0 - self.alpha) * self.fair_share()
            return
        t = before
        while t < now:
            end = self._q_start + q
            if not self._running.any() and not self._used.any() and end <= now:  # idle quanta: free credits only
                skipped = math.floor((now - self._q_start) / q)
                self._q_start += skipped * q
                self._credits += skipped * (1.0 - self.alpha) * self.fair_share()
                t = self._q_start
                continue
            seg = min(end, now)
            self._used += self._running * (seg - t)
            t = seg
            if seg >= end:
                self._settle()
                self._q_start = end
                self._credits += (1.0 - self.alpha) * self.fair_share()

    def _settle(self) -> None:
        """Steps 3-4 on the quantum's realised average allocation (module docstring)."""
        g = self.alpha * self.fair_share()
        used = self._used / self.quantum
        borrowed = np.maximum(used - g, 0.0)
        donated = np.maximum(g - used, 0.0)
        self._credits -= borrowed
        self._credits += water_fill(self._credits, donated, float(borrowed.sum()))
        self._used[:] = 0.0

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """A demanding leaf below its guarantee (fewest units per unit of guarantee), else the
        richest borrower (credits minus units borrowed now); ties rotate: the first tied leaf after
        the one picked last, cyclically; -1 if none."""
        mask = self._mask(demanding)
        self._advance(now)
        g = self.alpha * self.fair_share()
        below = mask & (self._running < g - 1e-9)
        if below.any():
            return self._rotate(self._running / np.maximum(g, 1e-12), below)
        richness = self._credits - np.maximum(self._running - g, 0.0)
        return self._rotate(-richness, mask)

    def _rotate(self, values: NDArray[np.float64], mask: NDArray[np.bool_]) -> int:
        """The smallest masked value's index; among ties the first after ``_turn`` (cyclic)."""
        first = argmin_first(values, mask)
        if first < 0:
            return first
        best = float(values[first])
        tied = np.flatnonzero(mask & (values <= best + TIE_RTOL * max(1.0, abs(best))))
        after = tied[tied > self._turn]
        self._turn = int(after[0] if after.size else tied[0])
        return self._turn

    def _extra_state(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "quantum": self.quantum, "credits": self._credits.tolist(), "used": self._used.tolist(),
                "q_start": None if math.isinf(self._q_start) else self._q_start, "turn": self._turn}  # fmt: skip

    def _load_extra(self, extra: dict[str, Any]) -> None:
        self.alpha, self.quantum = float(extra["alpha"]), float(extra["quantum"])
        self._credits = np.asarray(extra["credits"], dtype=np.float64)
        self._used = np.asarray(extra["used"], dtype=np.float64)
        self._q_start = -math.inf if extra["q_start"] is None else float(extra["q_start"])
        self._turn = int(extra.get("turn", -1))
