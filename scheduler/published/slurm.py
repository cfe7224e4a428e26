"""Slurm's classic fair share (``priority/multifactor`` with ``PriorityFlags=NO_FAIR_TREE``).

From SchedMD's documentation of the classic algorithm (slurm.schedmd.com,
"Classic Fairshare Algorithm" and "Multifactor Priority Plugin"):

* **normalized shares** ``S = (S_user / S_siblings) * (S_account / S_sibling-accounts) * ...``
  -- the leaf's fraction of the cluster (``QueueTree.leaf_fraction``);
* **usage** -- resource-seconds, decayed so that usage ``PriorityDecayHalfLife``
  ago counts half (``PriorityDecayHalfLife = 0``: no decay), optionally reset
  every ``PriorityUsageResetPeriod``; **normalized usage** ``U = U_user / U_total``;
* **effective usage** ``UE = U_child + (UE_parent - U_child) * S_child / S_all_siblings``
  below the first level (raw shares of the siblings), ``UE = U`` at the first level;
* **fair-share factor** ``F = 2^(-UE / S)`` (:func:`fairshare_factor`): 1 for no
  usage, 0.5 at exactly the share, towards 0 above it;
* priorities are recomputed every ``PriorityCalcPeriod`` (default 5 minutes)
  and queued jobs are started in priority order, then submit time.

:class:`SlurmAllocator` is that, for ONE resource type, as a fair-share-stage
policy: the demanding leaf with the highest factor of the last calculation
gets the free unit (ties: the leaf whose oldest queued job was submitted
first, Slurm's second key). The market's history settings map onto Slurm's:
``decay`` with half-life h is ``PriorityDecayHalfLife = h``, ``rounds`` of
length L is ``PriorityUsageResetPeriod = L`` without decay, ``forever`` is no decay.

Deviations: the job priority is the fair-share term alone
(``PriorityWeightFairshare`` > 0, the other weights 0; the age term would
only break ties, which the submit order does); usage is charged per resource
type (Slurm's TRES billing weights of 1 on this type, 0 on the others).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.limits import check_history, decayed_integral
from scheduler.fairshare.running import from_json_float, json_float
from scheduler.published.base import BatchBook

CALC_PERIOD_S = 300.0  # Slurm's default PriorityCalcPeriod (5 minutes)
TIE_RTOL = 1e-12


def fairshare_factor(usage: ArrayLike, shares: ArrayLike) -> NDArray[np.float64]:
    """``F = 2^(-U / S)`` elementwise (Slurm classic fair share).

    ``usage``: effective (normalized) usage U >= 0; ``shares``: normalized shares S > 0.
    Raises ValueError on a negative usage or a non-positive share.
    """
    u, s = np.asarray(usage, dtype=np.float64), np.asarray(shares, dtype=np.float64)
    if (u < 0).any() or np.isnan(u).any() or not (s > 0).all():
        raise ValueError("usage must be >= 0 and shares > 0")
    out: NDArray[np.float64] = np.exp2(-u / s)
    return out


def effective_usage(tree: QueueTree, usage: ArrayLike) -> NDArray[np.float64]:
    """(L,) effective usage UE per leaf from raw (decayed) usage per leaf (classic algorithm).

    ``U_node = usage_node / usage_root`` (a group's usage is its leaves' sum);
    first-level nodes ``UE = U``; below, ``UE = U + (UE_parent - U) * w / sum(w of siblings)``.
    All zero when nothing was used. Raises ValueError on a wrong shape or negative usage.
    """
    raw = np.asarray(usage, dtype=np.float64)
    if raw.shape != (len(tree.leaves),) or (raw < 0).any():
        raise ValueError("usage must be (L,) and >= 0")
    total = float(raw.sum())
    norm = tree.aggregate(raw / total if total > 0 else raw)
    ue = norm.copy()
    frac = tree.sibling_fraction
    for node in np.argsort(np.asarray(tree.depth), kind="stable"):
        parent = tree.parent[node]
        if parent >= 0 and tree.parent[parent] >= 0:  # below the first level
            ue[node] = norm[node] + (ue[parent] - norm[node]) * frac[node]
    out: NDArray[np.float64] = ue[list(tree.leaves)]
    return out


class SlurmAllocator(BatchBook):
    """Slurm classic fair share across leaf queues for ONE resource type (module docstring).

    Args:
        tree: accounts and users (leaves).
        history, history_length: ``decay`` + half-life, ``rounds`` + reset
            period, or ``forever`` (no decay), seconds.
        calc_period: ``PriorityCalcPeriod``, seconds (> 0).
    """

    policy = "slurm"
    uses_arrival_order = True  # ties go to the leaf whose oldest queued job was submitted first

    def __init__(
        self, tree: QueueTree, *, t_wait: float = 0.0, history: str = "forever", history_length: float = math.inf,
        calc_period: float = CALC_PERIOD_S,
    ) -> None:
        check_history(history, history_length)
        if not (math.isfinite(calc_period) and calc_period > 0):
            raise ValueError("calc_period must be finite and > 0")
        super().__init__(tree, t_wait=t_wait, history=history, history_length=history_length)
        self.calc_period = float(calc_period)
        self._usage = np.zeros(len(tree.leaves))  # decayed resource-seconds at the clock
        self._factor = np.ones(len(tree.leaves))  # F of the last calculation
        self._calc_index = -math.inf  # k of the last calculation at k * calc_period

    @property
    def half_life(self) -> float:
        """``PriorityDecayHalfLife`` in seconds (inf: no decay)."""
        return self.history_length if self.history == "decay" else math.inf

    def decayed_usage(self) -> NDArray[np.float64]:
        """(L,) decayed usage per leaf at the clock, resource-seconds (not ``usage(now)``: the
        cluster's why-waiting view reads that as an LTRF allocator's estimate)."""
        return self._usage.copy()

    def factors(self) -> NDArray[np.float64]:
        """(L,) fair-share factors of the last priority calculation."""
        return self._factor.copy()

    def _integrate(self, dt: float) -> None:
        """Running units held for ``dt`` more seconds, decayed by the half-life."""
        if dt <= 0:
            return
        h = self.half_life
        if math.isinf(h):
            self._usage += self._running * dt
        else:
            self._usage = self._usage * 2.0 ** (-dt / h) + self._running * float(decayed_integral(dt, h))

    def _on_time(self, before: float, now: float) -> None:
        if math.isinf(before):
            before = now
        k = math.floor(now / self.calc_period)
        boundary = k * self.calc_period
        if k > self._calc_index and boundary >= before:
            self._run_to(before, boundary)
            self._factor = fairshare_factor(effective_usage(self.tree, self._usage), self._frac)
            self._calc_index = k
            before = boundary
        elif k > self._calc_index:  # the first call after the last boundary
            self._calc_index = k
        self._run_to(before, now)

    def _run_to(self, before: float, now: float) -> None:
        """Integrate [before, now), resetting usage at each reset-period boundary (``rounds``)."""
        if self.history == "rounds":
            length = self.history_length
            reset = math.floor(now / length) * length
            if reset > before:
                self._usage[:] = 0.0
                before = reset
        self._integrate(now - before)

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """The demanding leaf with the highest factor of the last calculation; ties to the
        smallest ``head`` (arrival rank of its oldest queued job), then the lowest position; -1 if none."""
        mask = self._mask(demanding)
        self._advance(now)
        if not mask.any():
            return -1
        factor = np.where(mask, self._factor, -np.inf)
        best = float(factor.max())
        tied = mask & (factor >= best - TIE_RTOL * max(1.0, abs(best)))
        if head is None:
            return int(np.argmax(tied))
        rank = np.where(tied, np.asarray(head, dtype=np.float64), np.inf)
        return int(np.argmax(tied & (rank == rank.min())))

    def _extra_state(self) -> dict[str, Any]:
        return {"calc_period": self.calc_period, "usage": self._usage.tolist(), "factor": self._factor.tolist(),
                "calc_index": json_float(float(self._calc_index))}  # fmt: skip

    def _load_extra(self, extra: dict[str, Any]) -> None:
        self.calc_period = float(extra["calc_period"])
        self._usage = np.asarray(extra["usage"], dtype=np.float64)
        self._factor = np.asarray(extra["factor"], dtype=np.float64)
        self._calc_index = from_json_float(extra["calc_index"], -math.inf)
