"""The reservation timeline of one VM pool (paper 004, Sec. III-A: "future reservations on
VM pool resources, e.g. reserving 100 small instances from time 100 to 150").

A pool of ``capacity`` VMs holds intervals ``[start, end)`` of ``units`` VMs,
each owned by a job (committed: started, or tentative: cancellable) or by the
pool itself (VMs still booting after a reconfiguration, owner id < 0). The one
question the scheduler asks is vectorised: for R requests (k VMs for d seconds,
not before a ready time, not after a latest start), the earliest start at which
the pool has k free VMs for the whole run, and how many VMs stay free then.

Cost: building the usage profile is O(I log I) for I intervals (B <= 2I + 1
breakpoints); a range-maximum sparse table makes each request O(B) (one
candidate start per breakpoint, each checked in O(1)), so R requests cost
O(R B) numpy work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray


@dataclass
class Interval:
    """``units`` VMs of the pool held by ``owner`` over [start, end) (simulated seconds)."""

    owner: int
    units: int
    start: float
    end: float
    tentative: bool = True


@dataclass
class PoolTimeline:
    """Reservations on one pool (module docstring). ``capacity`` is the pool size in VMs."""

    capacity: int
    intervals: dict[int, Interval] = field(default_factory=dict)
    _cache: tuple[float, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None = None

    def add(self, iv: Interval) -> None:
        """Hold an interval (replaces the owner's previous one)."""
        self.intervals[iv.owner] = iv
        self._cache = None

    def remove(self, owner: int) -> Interval | None:
        """Drop the owner's interval, if any."""
        iv = self.intervals.pop(owner, None)
        if iv is not None:
            self._cache = None
        return iv

    def set_capacity(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError("a pool size must be >= 0")
        self.capacity = int(capacity)
        self._cache = None

    def prune(self, now: float) -> list[Interval]:
        """Forget intervals that ended at or before ``now``; returns them."""
        gone = [iv for iv in self.intervals.values() if iv.end <= now]
        for iv in gone:
            del self.intervals[iv.owner]
        if gone:
            self._cache = None
        return gone

    def used_at(self, t: float) -> int:
        """VMs held at time t."""
        return sum(iv.units for iv in self.intervals.values() if iv.start <= t < iv.end)

    def peak_after(self, t: float) -> int:
        """Largest number of VMs held at any time >= t."""
        _, used, _ = self._profile(t)
        return int(used.max()) if used.size else 0

    def _profile(self, now: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(breakpoints (B,), VMs used on [t_b, t_{b+1}) (B,), sparse table of range maxima)."""
        if self._cache is not None and self._cache[0] == now:
            return self._cache[1], self._cache[2], self._cache[3]
        ivs = [iv for iv in self.intervals.values() if iv.end > now]
        if not ivs:
            times, used = np.array([now]), np.zeros(1)
        else:
            s = np.maximum(np.array([iv.start for iv in ivs]), now)
            e = np.array([iv.end for iv in ivs])
            u = np.array([iv.units for iv in ivs], dtype=np.float64)
            times = np.unique(np.concatenate(([now], s, e)))
            delta = np.zeros(times.size)
            np.add.at(delta, np.searchsorted(times, s), u)
            np.add.at(delta, np.searchsorted(times, e), -u)
            used = np.cumsum(delta)
        levels = max(int(np.log2(used.size)) + 1, 1)
        table = np.full((levels, used.size), -np.inf)
        table[0] = used
        for j in range(1, levels):
            w = 1 << (j - 1)
            table[j, : used.size - 2 * w + 1] = np.maximum(table[j - 1, : used.size - 2 * w + 1], table[j - 1, w : used.size - w + 1])
        self._cache = (now, times, used, table)
        return times, used, table

    def earliest(
        self, now: float, units: NDArray[np.float64], duration: NDArray[np.float64], ready: NDArray[np.float64],
        latest: NDArray[np.float64] | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Earliest starts of R requests and the free VMs left at them.

        Args:
            now: simulated seconds; nothing starts before it.
            units: (R,) VMs wanted (>= 1).
            duration: (R,) seconds (> 0; ``inf`` never fits).
            ready: (R,) earliest allowed start of each request (>= now).
            latest: (R,) latest allowed start (``inf``: none).

        Returns:
            ``(start (R,), min_free (R,))``: the earliest start ``tau`` with
            ``max used over [tau, tau + d) <= capacity - k`` (``inf`` if none),
            and ``capacity - max used`` over that run (``-inf`` if none).
        """
        times, _, table = self._profile(now)
        B = times.size
        if latest is not None and latest.size:
            # candidate starts after every request's latest start can be left out
            top = float(np.max(latest))
            B = max(int(np.searchsorted(times, top, side="right")), 1) if np.isfinite(top) else B
        cols = np.arange(B)
        first = np.searchsorted(times, ready, side="right") - 1  # (R,)
        tau = np.maximum(ready[:, None], times[None, :B])  # (R, B)
        with np.errstate(invalid="ignore"):
            last = np.searchsorted(times, (tau + duration[:, None]).ravel(), side="left").reshape(tau.shape) - 1
        lo = np.broadcast_to(cols, tau.shape)
        hi = np.maximum(last, lo)
        peak = _range_max(table, lo, hi)
        free = self.capacity - peak
        ok = (cols[None, :] >= first[:, None]) & (free >= units[:, None]) & np.isfinite(duration)[:, None]
        if latest is not None:
            ok &= tau <= latest[:, None]
        cand = np.where(ok, tau, np.inf)
        pick = np.argmin(cand, axis=1)
        rows = np.arange(tau.shape[0])
        start = cand[rows, pick]
        min_free = np.where(np.isfinite(start), free[rows, pick], -np.inf)
        return start, min_free


def _range_max(table: NDArray[np.float64], lo: NDArray[np.intp], hi: NDArray[np.intp]) -> NDArray[np.float64]:
    """max(used[lo..hi]) elementwise from a (levels, B) sparse table (hi >= lo)."""
    level = np.minimum(np.log2(hi - lo + 1).astype(np.intp), table.shape[0] - 1)
    out: NDArray[np.float64] = np.maximum(table[level, lo], table[level, hi - (1 << level) + 1])
    return out
