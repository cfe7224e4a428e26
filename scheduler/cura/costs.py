"""Pairwise deferral costs and the priority of Cura's VM-aware scheduler (paper 004, Sec. III-A, Alg. 1).

**Costs.** All costs are resource costs ``VMs x unit price x runtime``
(App. A) of configurations that meet the job's deadline (Alg. 1 line 10).
``best[i]`` is job i's cheapest deadline-meeting configuration at the earliest
start the pools allow now; ``after[i, j]`` is job i's cheapest one once job j
holds its own best reservation. With them, the pairwise costs of Alg. 1 are
``Cost(Ji, Jj) = best[i] + after[j, i]`` and the **deferral-cost priority**

    P_i = sum_{j != i} Cost(Jj, Ji) - Cost(Ji, Jj)

ranks first the job whose deferral would cost the most (Sec. III-A: "a job J_i
has higher priority over J_j if reserving J_i after J_j would incur higher
resource cost"). A configuration that no longer meets a deadline costs a
penalty larger than every real cost, so a job that deferral would make late
ranks above all others.

``after`` is estimated with the single-reservation interaction model: job j's
reservation (k_j VMs of pool v_j over [s_j, e_j)) pushes a configuration of
job i on pool v_j to ``max(start, e_j)`` if the two runs overlap and the
pool's free VMs during i's run minus k_j drop below i's VMs; other pools are
unaffected. The reservations themselves are always exact (``cura_timeline``).

**Complexity.** One priority computation over n jobs with C = V x S
configurations each is O(n^2 C) numpy work and O(n C) memory per chunk of
rows (the paper's O(n^2), Sec. III-A); placing a job costs O(C B) for B
breakpoints of its pool's timeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

EPS = 1e-9
CHUNK = 256  # rows of the (rows, n, C) interaction arrays held at once


@dataclass
class ConfigTable:
    """Per-job, per-configuration data of n candidate jobs on the pools' current timelines.

    Configurations are numbered ``c = v * S + s`` (VM type v, size index s).
    """

    ids: list[int]
    rt: NDArray[np.float64]  # (n, C) seconds incl. framework start
    cost: NDArray[np.float64]  # (n, C)
    start: NDArray[np.float64]  # (n, C) earliest start (inf: none)
    free: NDArray[np.float64]  # (n, C) VMs left free during the run at that start
    feas: NDArray[np.bool_]  # (n, C) meets the deadline (and the window, if windowed)
    deadline: NDArray[np.float64]  # (n,)
    latest: NDArray[np.float64]  # (C,) latest start allowed per configuration's pool
    ready: NDArray[np.float64]  # (n,) earliest start allowed (now or the arrival)
    pool_of: NDArray[np.intp]  # (C,) VM type of each configuration
    vms_of: NDArray[np.float64]  # (C,) VMs of each configuration

    def rows(self, keep: Sequence[int]) -> ConfigTable:
        """The table of the rows ``keep`` (copies)."""
        k = np.asarray(keep, dtype=np.intp)
        return ConfigTable([self.ids[q] for q in keep], self.rt[k], self.cost[k], self.start[k], self.free[k], self.feas[k],
                      self.deadline[k], self.latest, self.ready[k], self.pool_of, self.vms_of)

    def choose(self, mask: NDArray[np.bool_] | None = None) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """(best cost (n,), chosen configuration (n,)); inf / -1 where none.
        Ties in cost go to the earlier end, then the lower configuration index."""
        ok = self.feas if mask is None else self.feas & mask
        cost = np.where(ok, self.cost, np.inf)
        best = cost.min(axis=1) if cost.shape[1] else np.full(cost.shape[0], np.inf)
        near = ok & (cost <= best[:, None] * (1 + 1e-12) + EPS)
        end = np.where(near, self.start + self.rt, np.inf)
        pick = np.argmin(end, axis=1).astype(np.intp)
        return best, np.where(np.isfinite(best), pick, -1)


def after_costs(tab: ConfigTable, first: NDArray[np.intp], first_rows: NDArray[np.intp]) -> NDArray[np.float64]:
    """(n, f): the cheapest deadline-meeting cost of each job of ``tab`` once job row
    ``first_rows[q]`` holds configuration ``first[q]`` (-1: holds nothing), by the
    single-reservation interaction model (module docstring); ``inf`` where none is left."""
    pool_of, vms_of = tab.pool_of, tab.vms_of
    rows = np.arange(len(tab.ids))
    q_ok = first >= 0
    fc = np.where(q_ok, first, 0)
    v_f = np.where(q_ok, pool_of[fc], -1)
    k_f = vms_of[fc]
    s_f = tab.start[first_rows, fc]
    e_f = s_f + tab.rt[first_rows, fc]
    out = np.empty((rows.size, first.size))
    for lo in range(0, rows.size, CHUNK):
        r = rows[lo : lo + CHUNK]
        st, rt, fe = tab.start[r][:, None, :], tab.rt[r][:, None, :], tab.free[r][:, None, :]
        pushed = (
            (pool_of[None, None, :] == v_f[None, :, None])
            & (st < e_f[None, :, None]) & (st + rt > s_f[None, :, None])
            & (fe - k_f[None, :, None] < vms_of[None, None, :])
        )
        new_start = np.maximum(st, e_f[None, :, None])
        still = (new_start + rt <= tab.deadline[r][:, None, None] + EPS) & (new_start <= tab.latest[None, None, :])
        ok = tab.feas[r][:, None, :] & (~pushed | still)
        out[lo : lo + CHUNK] = np.where(ok, tab.cost[r][:, None, :], np.inf).min(axis=2)
    return out


def penalty(tab: ConfigTable) -> float:
    """The cost that stands for "no configuration meets the deadline": 100 x the
    largest configuration cost of the table, plus 1 (money)."""
    finite = tab.cost[np.isfinite(tab.cost)]
    return 100.0 * (float(finite.max()) if finite.size else 1.0) + 1.0


def penalised(x: NDArray[np.float64], pen: float) -> NDArray[np.float64]:
    """``x`` with every infinite cost replaced by ``pen``."""
    return np.where(np.isfinite(x), x, pen)


def deferral_priority(tab: ConfigTable) -> NDArray[np.float64]:
    """(n,) P_i = sum_{j != i} Cost(Jj, Ji) - Cost(Ji, Jj) (module docstring); O(n^2 C)."""
    n = len(tab.ids)
    if n < 2:
        return np.zeros(n)
    best, choice = tab.choose()
    pen = penalty(tab)
    b, a = penalised(best, pen), penalised(after_costs(tab, choice, np.arange(n)), pen)  # a[i, j]: i once j reserved
    np.fill_diagonal(a, 0.0)
    # sum_j (b_j + a_ij) - (b_i + a_ji), j != i
    return np.asarray((b.sum() - b) + a.sum(axis=1) - (n - 1) * b - a.sum(axis=0), dtype=np.float64)


def outranks(tab: ConfigTable, a: NDArray[np.intp], b: NDArray[np.intp]) -> NDArray[np.bool_]:
    """(len a, len b): row a strictly outranks row b, i.e. Cost(Ja, Jb) < Cost(Jb, Ja)
    (Alg. 1 lines 12-13)."""
    best, choice = tab.choose()
    pen = penalty(tab)
    bb, aa = penalised(best, pen), penalised(after_costs(tab, choice, np.arange(len(tab.ids))), pen)
    cost_ab = bb[a][:, None] + aa[b][:, a].T  # a first, then b
    cost_ba = bb[b][None, :] + aa[a][:, b]  # b first, then a
    return np.asarray(cost_ab < cost_ba - EPS * (1 + np.abs(cost_ba)), dtype=np.bool_)
