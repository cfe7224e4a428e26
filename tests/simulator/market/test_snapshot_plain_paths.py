"""A snapshot whose rows are all gathered from the engine (no bid added since the last tick, no newer
Plan) takes the gathered columns and warm starts as they are: the same snapshot, bit for bit, as the
rows given one by one (``Columns.add``: the general path), and arrays of its own."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, MarketConfig
from simulator.market.snapshot import Columns, _all_nan, build_snapshot
from simulator.records import JobSpec

TREE = QueueTree.from_paths({"root.a.x": 2.0, "root.a.y": 1.0, "root.b.z": 1.0})
CONFIG = MarketConfig("abacus", "hltrf", "stride", 0.5, 1e-6, 1000, 30.0, "forever", math.inf)


def _engine(n: int, seed: int, slo_every: int) -> MarketEngine:
    rng = np.random.default_rng(seed)
    engine = MarketEngine.create([10, 5], TREE, CONFIG, seed=seed)
    for i in range(n):
        slo = -float(rng.uniform(0.1, 3.0)) if slo_every and i % slo_every == 0 else None
        spec = JobSpec(100 + i, i % 3, (int(rng.integers(0, 9)), int(rng.integers(0, 3))), (10.0, 20.0), 0.0)
        engine.submit(spec, Bid(float(rng.uniform(50, 200)), tuple(float(w) for w in rng.uniform(0.5, 2.0, 2)),
                                "log" if rng.random() < 0.5 else "linear", slo))
    engine.step(0.0)
    return engine


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 20), seed=st.integers(0, 10**6), slo_every=st.sampled_from([0, 1, 3]),
       clearings=st.integers(0, 3), late=st.integers(0, 3))
def test_a_snapshot_of_gathered_rows_is_the_one_given_row_by_row(n: int, seed: int, slo_every: int, clearings: int,
                                                                 late: int) -> None:
    engine = _engine(n, seed, slo_every)
    for _ in range(clearings):
        engine.clear()
        engine.step(engine.now + 10.0)
    for i in range(late):  # jobs without a warm start yet (NaN rows)
        engine.submit(JobSpec(900 + i, i % 3, (2, 1), (10.0, 20.0), engine.now), Bid(70.0 + i, (1.0, 0.5)))
    snap = engine.snapshot()
    rows = Columns()
    for job in engine.cluster.active_states():
        books = engine._books[job.spec.job_id]
        rows.add(job.spec.job_id, job.spec.leaf, books.bid, job.demand(), engine._shares.sub(books.row))
    want = build_snapshot(rows, None, engine.config, engine._auction_capacity())
    for name in ("job_ids", "group", "budgets", "weights", "demand", "capacity", "warm_start", "min_utility"):
        got, expected = getattr(snap, name), getattr(want, name)
        assert (got is None) == (expected is None), name
        if got is not None:
            assert got.dtype == expected.dtype and got.shape == expected.shape and got.tobytes() == expected.tobytes(), name
    assert snap.utility == want.utility and (snap.alpha, snap.tol, snap.max_rounds) == (want.alpha, want.tol, want.max_rounds)
    assert snap.warm_start is not None and snap.warm_start.base is None  # its own array: the engine's rows stay
    snap.warm_start[:] = -1.0
    snap.budgets[:] = -1.0
    again = engine.snapshot()
    assert again.warm_start is not None and want.warm_start is not None
    assert again.warm_start.tobytes() == want.warm_start.tobytes() and again.budgets.tobytes() == want.budgets.tobytes()


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(st.just(math.nan), st.floats(allow_nan=True, allow_infinity=True)), max_size=80))
def test_no_slo_in_floats_is_numpys(values: list[float]) -> None:
    arr = np.array(values, dtype=np.float64)
    assert _all_nan(arr) == bool(np.isnan(arr).all())
