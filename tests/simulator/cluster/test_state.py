"""Cluster.to_state / from_state: a run cut and serialised anywhere continues identically."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.cluster.model import Cluster
from simulator.records import AdvanceReport, JobSpec
from tests.simulator.simtools import Scenario, four_leaf_tree, scenarios


def through_json(cluster: Cluster) -> Cluster:
    text = json.dumps(cluster.to_state(), allow_nan=False)  # strict JSON: PostgreSQL jsonb accepts it
    return Cluster.from_state(four_leaf_tree(), json.loads(text))


def merged(reports: list[AdvanceReport]) -> dict[str, Any]:
    """The reports of several advance calls, in the shape of one call's."""
    progress: dict[int, Any] = {}
    for r in reports:
        progress.update(r.progress)
    return {
        "finished": [f for r in reports for f in r.finished],
        "samples": [(s.time, s.usage.tolist(), s.entitled.tolist(), s.demand.tolist(), s.rho.tolist())
                    for r in reports for s in r.samples],
        "progress": progress,
        "started": sum(r.started_tasks for r in reports),
        "completed": sum(r.finished_tasks for r in reports),
    }  # fmt: skip


@settings(max_examples=120, deadline=None)
@given(
    scenarios(),
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 3.0, 4.75, 7.0, 9.5, 12.0, 20.0]), max_size=5),
    st.booleans(),
)
def test_serialised_run_matches_straight_run(scenario: Scenario, cuts: list[float], stop: bool) -> None:
    straight = scenario.cluster()
    a = [straight.advance(40.0), straight.advance(math.inf)]

    resumed = scenario.cluster()
    b = []
    for cut in sorted(cuts):
        # Cut at arbitrary times; optionally also at departures (the runner's
        # pattern: freed slots are handed out by the next call, at the same time).
        while resumed.now < cut:
            b.append(resumed.advance(cut, stop_on_departure=stop))
            resumed = through_json(resumed)
    b.append(resumed.advance(40.0))
    resumed = through_json(resumed)
    b.append(resumed.advance(math.inf))

    assert merged(b) == merged(a)
    assert resumed.to_state() == straight.to_state()


def test_state_is_plain_json_and_restores_mid_task() -> None:
    cluster = Cluster([3, 2], four_leaf_tree(), policy="hltrf", t_wait=math.inf, dispatch="lottery",
                      seed=5, known_durations=False, sample_interval=math.inf)  # fmt: skip
    cluster.submit(JobSpec(1, 0, (4, 2), (3.0, 1.5), 0.0))
    cluster.submit(JobSpec(2, 3, (2, 2), (2.0, 1.0), 6.0))
    cluster.set_shares({1: np.array([1.0, 1.0])})
    cluster.advance(4.0)
    state = cluster.to_state()
    assert json.loads(json.dumps(state, allow_nan=False)) == state
    copy = Cluster.from_state(four_leaf_tree(), state)
    assert copy.job_state(1) == cluster.job_state(1)
    assert copy.known_jobs() == cluster.known_jobs() == [1, 2]
    assert copy.active_jobs() == [1]
    assert (copy.now, copy.t_wait, copy.sample_interval) == (4.0, math.inf, math.inf)
    assert [f.job_id for f in copy.advance(math.inf).finished] == [1, 2]


def test_restoring_on_another_tree_is_refused() -> None:
    state = Cluster([1], four_leaf_tree()).to_state()
    from scheduler.fairshare.fairness import QueueTree

    with pytest.raises(ValueError):
        Cluster.from_state(QueueTree.flat(["x", "y"]), state)
    with pytest.raises(ValueError):
        Cluster.from_state(four_leaf_tree(), {**state, "format": 99})
