"""The stride dispatcher's ledgers change nothing: random call sequences give the
reference dispatcher's choices, state and counts, bit for bit, after every step.

``bench.dispatch_reference.ReferenceDispatcher`` is ``scheduler.dispatch`` as it was before
the ledgers (a dict of Python floats updated job by job). Each example drives both with the
same calls -- choose (bursts on the same or an equal id array, overlapping leaves, leaves
whose membership changes, sizes on both sides of ``_SMALL_LEDGER``, unsorted and extreme
ids, tied, zero, signed-zero and tiny shares, random eligibility and resources), record,
forget, to_state, from_state (also of a state with arbitrary finite credits) and invalid
calls -- and compares positions, ``to_state()`` and ``served()`` after every step.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.dispatch_reference import ReferenceDispatcher
from scheduler.dispatch import _SMALL_LEDGER, DispatchMode, ShareDispatcher

RESOURCES = 3
MAX_POOL = 45
EXTREME_IDS = [-(2**63), 2**63 - 1, -1, 0, 2**62]
SPECIAL_SHARES = [0.0, -0.0, 5e-324, 1e-300, 0.25, 0.25, 1.0, 1e300, 1 / 3]
SPECIAL_CREDITS = [0.0, -0.0, 2.0, -2.0, 1.9999999999999998, 5e-324, -7.5, 1e300, 0.1]


class Pair:
    """The new and the reference dispatcher, driven together."""

    def __init__(self, mode: DispatchMode, seed: int) -> None:
        self.new: Any = ShareDispatcher(mode, seed=seed)
        self.ref: Any = ReferenceDispatcher(mode, seed=seed)

    def both(self, method: str, *args: Any) -> Any:
        """Call ``method`` on both; equal results, or the same exception type and message."""
        outcomes = []
        for dispatcher in (self.new, self.ref):
            try:
                outcomes.append(("ok", getattr(dispatcher, method)(*args)))
            except (ValueError, KeyError) as error:
                outcomes.append((type(error).__name__, str(error)))
        assert outcomes[0] == outcomes[1], (method, outcomes)
        return outcomes[0][1]

    def check(self, pool: list[int]) -> None:
        new_state, ref_state = self.new.to_state(), self.ref.to_state()
        assert json.dumps(new_state) == json.dumps(ref_state)  # also tells -0.0 from 0.0
        for job in pool:
            for res in range(RESOURCES):
                assert self.new.served(job, res) == self.ref.served(job, res)

    def reload(self, state: dict[str, Any]) -> None:
        text = json.dumps(state)
        self.new = ShareDispatcher.from_state(json.loads(text))
        self.ref = ReferenceDispatcher.from_state(json.loads(text))


def job_pool(data: st.DataObject) -> list[int]:
    """Distinct ids, mostly small (so leaves overlap), some extreme; up to ``MAX_POOL``."""
    small = st.integers(0, 60)
    wide = st.one_of(small, st.sampled_from(EXTREME_IDS), st.integers(-(2**63), 2**63 - 1))
    size = data.draw(st.integers(1, MAX_POOL))
    return data.draw(st.lists(st.one_of(small, small, wide), min_size=size, max_size=size, unique=True))


def leaf_of(data: st.DataObject, pool: list[int]) -> list[int]:
    """Some of the pool's jobs (any number, so both ledger kinds), in increasing or mixed order."""
    size = data.draw(st.integers(0, len(pool)))
    jobs = data.draw(st.permutations(pool))[:size]
    return sorted(jobs) if data.draw(st.booleans()) else jobs


def shares_for(data: st.DataObject, k: int) -> np.ndarray:
    kind = data.draw(st.sampled_from(["random", "equal", "special", "zero"]))
    if kind == "equal":
        return np.full(k, data.draw(st.sampled_from([0.5, 1 / 3, 1e-9])))
    if kind == "zero":
        return np.zeros(k)
    if kind == "special":
        return np.array(data.draw(st.lists(st.sampled_from(SPECIAL_SHARES), min_size=k, max_size=k)), dtype=np.float64)
    return np.array(data.draw(st.lists(st.floats(0.0, 10.0), min_size=k, max_size=k)), dtype=np.float64)


def step(pair: Pair, data: st.DataObject, pool: list[int], leaves: list[list[int]]) -> None:
    """One random call (or burst of calls) on both dispatchers."""
    op = data.draw(st.sampled_from(["choose", "choose", "choose", "choose", "record", "forget", "to_state",
                                    "round_trip", "load", "move", "invalid"]))
    if op == "choose":
        leaf = leaves[data.draw(st.integers(0, len(leaves) - 1))]
        ids = np.array(leaf, dtype=np.int64)
        shares = shares_for(data, len(leaf))
        eligible = np.array(data.draw(st.lists(st.booleans(), min_size=len(leaf), max_size=len(leaf))), dtype=np.bool_)
        resource = data.draw(st.integers(0, RESOURCES - 1))
        for _ in range(data.draw(st.integers(1, 25))):
            if data.draw(st.booleans()):  # an equal array, not the same object (the caller rebuilt its cache)
                ids, shares, eligible = ids.copy(), shares.copy(), eligible.copy()
            if data.draw(st.integers(0, 4)) == 0 and leaf:  # a job runs out of eligible work mid-burst
                eligible = eligible.copy()
                eligible[data.draw(st.integers(0, len(leaf) - 1))] = data.draw(st.booleans())
            position = pair.both("choose", ids, shares, eligible, resource)
            assert position == -1 or eligible[position]
    elif op == "record":
        pair.both("record", data.draw(st.sampled_from(pool)), data.draw(st.integers(0, RESOURCES - 1)), data.draw(st.integers(1, 5)))
    elif op == "forget":
        pair.both("forget", data.draw(st.sampled_from(pool)))
    elif op == "to_state":
        assert json.dumps(pair.new.to_state()) == json.dumps(pair.ref.to_state())
    elif op == "round_trip":
        pair.reload(pair.ref.to_state())
    elif op == "load":  # a state with any finite credits, not only those the rule reaches
        state = pair.ref.to_state()
        for row in state["counters"]:
            row[2] = data.draw(st.one_of(st.sampled_from(SPECIAL_CREDITS), st.floats(-3.0, 3.0)))
        pair.reload(state)
    elif op == "move":  # a job arrives in or leaves a leaf (membership changes, leaves may overlap)
        leaf = leaves[data.draw(st.integers(0, len(leaves) - 1))]
        job = data.draw(st.sampled_from(pool))
        if job in leaf:
            leaf.remove(job)
        else:
            leaf.insert(data.draw(st.integers(0, len(leaf))), job)
    else:  # duplicate ids, a negative share, a negative resource: the same error from both
        leaf = leaves[0] + leaves[0][:1]
        shares = np.ones(len(leaf))
        if data.draw(st.booleans()) and len(leaf) > 1:
            leaf, shares = leaf[:-1], shares[:-1] * -1
        pair.both("choose", np.array(leaf, dtype=np.int64), shares, np.ones(len(leaf), dtype=np.bool_),
                  data.draw(st.sampled_from([0, -1])))
    pair.check(pool)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_stride_matches_the_reference_after_every_step(data: st.DataObject) -> None:
    pool = job_pool(data)
    leaves = [leaf_of(data, pool) for _ in range(data.draw(st.integers(1, 4)))]
    pair = Pair("stride", seed=0)
    for _ in range(data.draw(st.integers(1, 30))):
        step(pair, data, pool, leaves)


@pytest.mark.parametrize("mode", ["lottery", "fifo"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_other_modes_match_the_reference_after_every_step(mode: DispatchMode, data: st.DataObject) -> None:
    pool = job_pool(data)
    leaves = [leaf_of(data, pool) for _ in range(2)]
    pair = Pair(mode, seed=data.draw(st.integers(0, 2**32)))
    for _ in range(data.draw(st.integers(1, 15))):
        step(pair, data, pool, leaves)


def test_the_random_leaves_reach_both_ledger_kinds() -> None:
    """Leaves of up to ``MAX_POOL`` jobs: lists below ``_SMALL_LEDGER``, numpy vectors above."""
    assert 2 < _SMALL_LEDGER < MAX_POOL // 2
    dispatcher = ShareDispatcher("stride")
    for k in (_SMALL_LEDGER, _SMALL_LEDGER + 1):
        dispatcher.choose(np.arange(k, dtype=np.int64) + 100 * k, np.ones(k), np.ones(k, dtype=np.bool_), 0)
    kinds = {type(ledger).__name__ for by_resource in dispatcher._ledgers.values() for ledger in by_resource.values()}
    assert kinds == {"_ListLedger", "_ArrayLedger"}


def test_a_long_run_on_a_large_leaf_is_identical() -> None:
    """400 jobs in 4 leaves of unsorted ids, 20,000 units with eligibility changing (the live tick's shape);
    two leaves have equal shares, so credits tie."""
    rng = np.random.default_rng(26)
    pair = Pair("stride", seed=0)
    leaves = np.array_split(rng.permutation(np.arange(1000, 1400, dtype=np.int64)), 4)
    shares = [np.full(leaf.size, 0.01) if q % 2 else rng.dirichlet(np.ones(leaf.size)) for q, leaf in enumerate(leaves)]  # ties
    eligible = [rng.random(leaf.size) < 0.8 for leaf in leaves]
    for unit in range(20_000):
        q, res = int(rng.integers(4)), int(rng.integers(2))
        if unit % 97 == 0:
            eligible[q] = eligible[q].copy()
            eligible[q][rng.integers(leaves[q].size)] ^= True
        assert pair.new.choose(leaves[q], shares[q], eligible[q], res) == pair.ref.choose(leaves[q], shares[q], eligible[q], res)
        if unit % 2500 == 0:
            pair.check(leaves[q].tolist())
    pair.check([int(i) for leaf in leaves for i in leaf])


@pytest.mark.parametrize("credit", [float("nan"), float("inf"), float("-inf")])
def test_a_state_with_a_non_finite_credit_is_rejected(credit: float) -> None:
    """No sequence of choices makes a non-finite credit (shares are finite, credits clipped);
    the ledgers rely on it, so a state carrying one is malformed."""
    state = ShareDispatcher("stride").to_state()
    state["counters"] = [[1, 0, credit, 3]]
    with pytest.raises(ValueError, match="not finite"):
        ShareDispatcher.from_state(state)
