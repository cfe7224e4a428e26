"""Price preview on copies of the market engine."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from scheduler.fairshare.fairness import QueueTree
from simulator.market.engine import MarketEngine
from simulator.market.preview import preview_budgets, price_preview
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec

TREE = QueueTree.from_paths({"root.a": 1.0, "root.b": 1.0})


def market(alpha: float = 1.0) -> MarketEngine:
    return MarketEngine.create([10, 5], TREE, MarketConfig(alpha=alpha), sample_interval=math.inf)


def test_alone_in_an_empty_market_the_finish_time_is_the_waves() -> None:
    """20 map tasks of 60 s on 10 slots (2 waves), then 5 reduce tasks of 30 s on 5 slots: 150 s."""
    e = market()
    spec = JobSpec(99, 0, (20, 5), (60.0, 30.0), 0.0)
    [p] = price_preview(e, spec, Bid(1.0, (1.0, 1.0)), [50.0])
    np.testing.assert_allclose(p.shares, [1.0, 1.0])
    assert p.finish_s == pytest.approx(150.0) and p.converged and p.in_pool


def test_the_engine_is_not_touched_and_shares_match_placing_the_bid() -> None:
    e = market(alpha=0.5)
    e.submit(JobSpec(1, 0, (40, 5), (60.0, 30.0), 0.0), Bid(100.0, (2.0, 1.0)))
    e.submit(JobSpec(2, 0, (40, 5), (60.0, 30.0), 0.0), Bid(30.0, (1.0, 3.0)))
    e.clear()
    e.step(100.0)
    before = json.dumps(e.to_state(), sort_keys=True)
    spec, bid = JobSpec(7, 0, (10, 2), (60.0, 30.0), 0.0), Bid(1.0, (1.0, 1.0))
    points = price_preview(e, spec, bid, preview_budgets(50.0))
    assert json.dumps(e.to_state(), sort_keys=True) == before  # a dry run
    # oracle: actually place the 50 bid on a rebuilt copy and clear it
    placed = MarketEngine.from_state(TREE, json.loads(before))
    placed.submit(JobSpec(7, 0, (10, 2), (60.0, 30.0), placed.now), Bid(50.0, (1.0, 1.0)))
    plan, _ = placed.clear()
    row = int(np.flatnonzero(plan.job_ids == 7)[0])
    mid = points[3]
    assert mid.budget == 50.0
    np.testing.assert_allclose(mid.shares, plan.shares[row], atol=1e-6)
    # more money never buys a smaller share (paper 000, Lemma 4 with linear utilities)
    map_shares = [p.shares[0] for p in points]
    assert map_shares == sorted(map_shares)
    assert points[-1].finish_s is not None and points[0].finish_s is not None
    assert points[-1].finish_s <= points[0].finish_s


def test_a_known_job_or_bad_budget_is_refused() -> None:
    e = market()
    e.submit(JobSpec(1, 0, (4, 0), (60.0, 1.0), 0.0), Bid(10.0, (1.0, 0.0)))
    with pytest.raises(ValueError, match="already in the market"):
        price_preview(e, JobSpec(1, 0, (1, 0), (1.0, 1.0), 0.0), Bid(1.0, (1.0, 0.0)), [1.0])
    with pytest.raises(ValueError, match="budget"):
        price_preview(e, JobSpec(5, 0, (1, 0), (1.0, 1.0), 0.0), Bid(1.0, (1.0, 0.0)), [0.0])
    with pytest.raises(ValueError):
        preview_budgets(-1.0)


def test_beyond_the_horizon_there_is_no_finish_time() -> None:
    e = market()
    [p] = price_preview(e, JobSpec(3, 0, (100, 0), (3600.0, 1.0), 0.0), Bid(1.0, (1.0, 0.0)), [5.0], horizon=600.0)
    assert p.finish_s is None
