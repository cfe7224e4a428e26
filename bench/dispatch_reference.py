"""The stride dispatcher as it was before its ledgers were vectorised, kept as the reference for the fast one.

A verbatim copy of ``scheduler.dispatch`` at commit c3830cc (``ShareDispatcher`` renamed
``ReferenceDispatcher``): plain Python dict lookups and updates for every eligible job on
every unit (O(k) Python work per unit). ``tests/scheduler/test_dispatch_reference.py`` drives
it and ``scheduler.dispatch.ShareDispatcher`` with the same random calls and asserts equal
choices, ``to_state()`` and ``served()`` after every step; ``bench/bench_dispatch.py`` times
both and requires the same winners. Not for the product: it is slower, and frozen.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import NDArray

DispatchMode = Literal["stride", "lottery", "fifo"]
MODES: tuple[str, ...] = get_args(DispatchMode)
_CREDIT_LIMIT = 2.0


class ReferenceDispatcher:
    """Chooses which eligible job of a leaf queue gets a free unit of a resource type.

    Args:
        mode: "stride" (deterministic deficit rule), "lottery" (paper 000,
            Sec. 3: probability proportional to share) or "fifo" (oldest
            eligible job; ``job_ids`` must be in arrival order).
        seed: seed of the lottery's numpy Generator (PCG64).

    Raises:
        ValueError: unknown mode.
    """

    def __init__(self, mode: DispatchMode = "stride", seed: int = 0) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown dispatch mode {mode!r}; use one of {MODES}")
        self.mode: DispatchMode = mode
        self.seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self.seed))
        self._credit: dict[tuple[int, int], float] = {}
        self._served: dict[tuple[int, int], int] = {}

    def choose(
        self,
        job_ids: NDArray[np.int64],
        shares: NDArray[np.float64],
        eligible: NDArray[np.bool_],
        resource: int,
    ) -> int:
        """Position in ``job_ids`` of the job getting one unit of ``resource``, or -1.

        Args:
            job_ids: (k,) int64 distinct job identifiers of the leaf queue.
            shares: (k,) allocation probabilities s_kj for this resource type
                (finite, >= 0; need not sum to 1).
            eligible: (k,) bool, the job has pending work for this resource.
            resource: resource-type index j (>= 0).

        Returns:
            The winner's position, or -1 when no job is eligible.

        Raises:
            ValueError: mismatched shapes, duplicate ids, negative or
                non-finite shares, negative resource index.
        """
        ids, weights, mask = _check_choice(job_ids, shares, eligible, resource)
        if not mask.any():
            return -1
        if self.mode == "fifo":
            position = int(np.argmax(mask))  # jobs come in arrival order: the oldest eligible
        elif self.mode == "lottery":
            position = self._draw(_renormalise(weights, mask))
        else:
            position = self._largest_credit(ids, _renormalise(weights, mask), mask, resource)
        key = (int(ids[position]), int(resource))
        self._served[key] = self._served.get(key, 0) + 1
        return position

    def record(self, job_id: int, resource: int, units: int) -> None:
        """Count ``units`` given to ``job_id`` without a choice (it was the only candidate)."""
        key = (int(job_id), int(resource))
        self._served[key] = self._served.get(key, 0) + int(units)

    def served(self, job_id: int, resource: int) -> int:
        """Units of ``resource`` this dispatcher has given to ``job_id``."""
        return self._served.get((int(job_id), int(resource)), 0)

    def forget(self, job_id: int) -> None:
        """Drop every counter of a finished job (no error if unknown)."""
        job = int(job_id)
        for table in (self._credit, self._served):
            for key in [k for k in table if k[0] == job]:
                del table[key]

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable state; 128-bit generator words are stored as strings."""
        rng = self._rng.bit_generator.state
        return {
            "mode": self.mode,
            "seed": self.seed,
            "rng": {
                "state": str(rng["state"]["state"]),
                "inc": str(rng["state"]["inc"]),
                "has_uint32": int(rng["has_uint32"]),
                "uinteger": int(rng["uinteger"]),
            },
            "counters": [
                [job, res, self._credit.get((job, res), 0.0), self._served.get((job, res), 0)]
                for job, res in sorted(set(self._credit) | set(self._served))
            ],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ReferenceDispatcher:
        """Rebuild a dispatcher from :meth:`to_state`; its future choices are identical.

        Raises KeyError / ValueError on a malformed state.
        """
        dispatcher = cls(mode=state["mode"], seed=int(state["seed"]))
        rng = state["rng"]
        dispatcher._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int(rng["state"]), "inc": int(rng["inc"])},
            "has_uint32": int(rng["has_uint32"]),
            "uinteger": int(rng["uinteger"]),
        }
        for job, res, credit, served in state["counters"]:
            key = (int(job), int(res))
            dispatcher._credit[key] = float(credit)
            dispatcher._served[key] = int(served)
        return dispatcher

    def _draw(self, probabilities: NDArray[np.float64]) -> int:
        """Lottery draw by inverse CDF (one uniform per unit, reproducible)."""
        cumulative = np.cumsum(probabilities)
        u = self._rng.random() * cumulative[-1]
        position = int(np.searchsorted(cumulative, u, side="right"))
        # guard the u == total edge and skip zero-probability positions
        position = min(position, int(probabilities.shape[0]) - 1)
        while probabilities[position] == 0:
            position -= 1
        return position

    def _largest_credit(
        self,
        ids: NDArray[np.int64],
        renormalised: NDArray[np.float64],
        mask: NDArray[np.bool_],
        resource: int,
    ) -> int:
        """Deficit rule: eligible jobs earn their share; largest credit wins, ties to lowest id."""
        # Plain Python on purpose: leaf queues are small and this runs once per unit.
        id_list = ids.tolist()
        keys = [(job, int(resource)) for job in id_list]
        earned = renormalised.tolist()
        credit = [self._credit.get(key, 0.0) + share for key, share in zip(keys, earned, strict=True)]
        candidates = np.flatnonzero(mask).tolist()
        position = max(candidates, key=lambda q: (credit[q], -id_list[q]))
        credit[position] -= 1.0
        for q in candidates:
            self._credit[keys[q]] = min(max(credit[q], -_CREDIT_LIMIT), _CREDIT_LIMIT)
        return int(position)


def _check_choice(
    job_ids: NDArray[np.int64],
    shares: NDArray[np.float64],
    eligible: NDArray[np.bool_],
    resource: int,
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]]:
    ids = np.asarray(job_ids, dtype=np.int64)
    weights = np.asarray(shares, dtype=np.float64)
    mask = np.asarray(eligible, dtype=np.bool_)
    if ids.ndim != 1 or weights.shape != ids.shape or mask.shape != ids.shape:
        shapes = f"{ids.shape}, {weights.shape}, {mask.shape}"
        raise ValueError(f"job_ids, shares and eligible must be (k,), got {shapes}")
    if len(set(ids.tolist())) != ids.shape[0]:
        raise ValueError("job_ids must be distinct")
    # NaN fails ">= 0" and inf makes the sum infinite: two cheap checks cover both
    if not (np.all(weights >= 0) and np.isfinite(weights.sum())):
        raise ValueError("shares must be finite and >= 0")
    if int(resource) != resource or resource < 0:
        raise ValueError(f"resource must be a non-negative integer, got {resource}")
    return ids, weights, mask


def _renormalise(shares: NDArray[np.float64], mask: NDArray[np.bool_]) -> NDArray[np.float64]:
    """(k,) shares restricted to eligible jobs, summing to 1 (uniform if all zero)."""
    restricted: NDArray[np.float64] = np.where(mask, shares, 0.0)
    total = float(restricted.sum())
    if total > 0:
        return restricted / total
    uniform: NDArray[np.float64] = mask / mask.sum()
    return uniform
