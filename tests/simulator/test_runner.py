"""Offline runs: the market is re-cleared at every arrival and departure."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from scheduler.abacus.policy import AbacusPolicy
from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Plan
from scheduler.registry import MECHANISMS
from scheduler.types import MarketSnapshot
from simulator.runner import MarketParams, run
from simulator.workloads.traces import TraceJob


@MECHANISMS.register("test-recording-abacus", "Abacus, recording its snapshots (tests)")
class RecordingPolicy:
    """Abacus, remembering every snapshot it was asked to clear."""

    name = "test-recording-abacus"
    snapshots: ClassVar[list[MarketSnapshot]] = []

    def clear(self, snapshot: MarketSnapshot) -> Plan:
        RecordingPolicy.snapshots.append(snapshot)
        return AbacusPolicy().clear(snapshot)


TREE = QueueTree.from_paths({"root.g1.alice": 1, "root.g1.bob": 1, "root.g2.carol": 2})
LEAF = {"alice": 0, "bob": 1, "carol": 2}


def workload() -> list[TraceJob]:
    jobs = []
    for k in range(12):
        user = ["alice", "bob", "carol"][k % 3]
        jobs.append(TraceJob(k, 3.0 * k, user, "g", (1 + k % 4, k % 3), (2.0 + k % 5, 4.0)))
    return jobs


def test_every_job_finishes_no_faster_than_its_critical_path() -> None:
    jobs = workload()
    result = run(jobs, tree=TREE, leaf_of_user=LEAF, capacity=[3, 2])
    assert result.jobs == 12 and len(result.finished) == 12 and result.unfinished == []
    spec = {j.job_id: j for j in jobs}
    for f in result.finished:
        j = spec[f.job_id]
        crit = sum(d for t, d in zip(j.tasks, j.task_duration, strict=True) if t > 0)
        assert f.response_time >= crit - 1e-9
    assert result.start_time == 0.0 and result.end_time == max(f.finish_time for f in result.finished)
    assert result.prices.shape == (result.clearings, 2) and np.all(result.prices >= 0)
    assert np.all(np.diff(result.clearing_times) >= 0)
    assert result.clearing_wall_s == []  # no timer: nothing wall-clock in the result


def test_a_clearing_follows_every_arrival_and_departure() -> None:
    RecordingPolicy.snapshots.clear()
    jobs = workload()
    result = run(jobs, tree=TREE, leaf_of_user=LEAF, capacity=[3, 2],
                 params=MarketParams(mechanism="test-recording-abacus"))  # fmt: skip
    # one clearing after each arrival (as the live market clears after each bid), and
    # one after each departure time at which some job is still active
    pairs = _pairs(jobs, result.finished)
    departures = {f.finish_time for f in result.finished}
    busy = {t for t in departures if any(j.submit_time < t < f.finish_time for j, f in pairs)}
    assert set(result.clearing_times.tolist()) == busy | {j.submit_time for j in jobs}
    assert result.clearings == len(RecordingPolicy.snapshots) == len(busy) + len(jobs)
    previous: set[int] = set()
    for snap in RecordingPolicy.snapshots:
        ids = snap.job_ids.tolist()
        assert snap.group.tolist() == [LEAF[jobs[i].user] for i in ids]
        assert snap.demand.any(axis=1).all()
        assert snap.warm_start is not None
        new = np.isnan(snap.warm_start).all(axis=1)
        assert [i for i, n in zip(ids, new, strict=True) if not n] == [i for i in ids if i in previous]
        previous = set(ids)


def _pairs(jobs: list[TraceJob], finished: list) -> list:  # type: ignore[type-arg]
    by_id = {f.job_id: f for f in finished}
    return [(j, by_id[j.job_id]) for j in jobs]


def test_budget_buys_share_within_a_leaf() -> None:
    jobs = [TraceJob(1, 0.0, "alice", "g", (40,), (1.0,)), TraceJob(2, 0.0, "alice", "g", (40,), (1.0,))]
    params = MarketParams(alpha=1.0, utility="linear", budget=lambda j: 100.0 if j.job_id == 2 else 10.0,
                          weights=lambda j: [1.0])  # fmt: skip
    result = run(jobs, tree=QueueTree.flat(["alice"]), leaf_of_user={"alice": 0}, capacity=[1], params=params)
    finish = {f.job_id: f.finish_time for f in result.finished}
    assert finish[2] < finish[1]
    assert finish[2] <= 40 * 11 / 10 + 1  # about 10 of every 11 units until it is done


def test_runs_are_deterministic_and_mapping_equals_callable() -> None:
    params = MarketParams(dispatch="lottery", seed=3)
    a = run(workload(), tree=TREE, leaf_of_user=LEAF, capacity=[2, 1], params=params)
    b = run(workload(), tree=TREE, leaf_of_user=LEAF.__getitem__, capacity=[2, 1], params=params)
    assert a.summary() == b.summary()
    assert [(f.job_id, f.finish_time) for f in a.finished] == [(f.job_id, f.finish_time) for f in b.finished]


def test_until_stops_the_run() -> None:
    result = run(workload(), tree=TREE, leaf_of_user=LEAF, capacity=[1, 1], until=20.0)
    assert result.end_time == 20.0
    assert result.unfinished and len(result.finished) + len(result.unfinished) == 12
    assert all(f.finish_time <= 20.0 for f in result.finished)


def test_summary_fields() -> None:
    summary = run(workload(), tree=TREE, leaf_of_user=LEAF, capacity=[3, 2]).summary()
    for key in ("jobs", "finished", "mean_response_s", "p95_response_s", "clearings", "makespan_s", "mean_utilisation"):
        assert key in summary
    assert 0 < summary["mean_utilisation"] <= 1
    assert summary["p95_response_s"] >= summary["median_response_s"]


def test_empty_and_unknown_users() -> None:
    empty = run([], tree=TREE, leaf_of_user=LEAF, capacity=[1, 1])
    assert empty.summary()["finished"] == 0 and empty.summary()["mean_response_s"] is None
    with pytest.raises(KeyError):
        run([TraceJob(1, 0.0, "mallory", "g", (1, 0), (1.0, 0.0))], tree=TREE, leaf_of_user=LEAF, capacity=[1, 1])
    with pytest.raises(ValueError):
        run(workload(), tree=TREE, leaf_of_user=LEAF, capacity=[1, 1],
            params=MarketParams(weights=lambda j: [1.0]))  # fmt: skip


def test_zero_capacity_is_refused() -> None:
    # the auction's unit prices divide by the capacity
    jobs = [TraceJob(1, 0.0, "alice", "g", (1, 1), (1.0, 1.0))]
    with pytest.raises(ValueError, match="capacity"):
        run(jobs, tree=TREE, leaf_of_user=LEAF, capacity=[1, 0])


def test_zero_duration_and_empty_jobs_do_not_stall_the_loop() -> None:
    jobs = [TraceJob(k, float(k // 3), "alice", "g", (3, 2 * (k % 2)), (0.0, 0.0)) for k in range(9)]
    jobs.append(TraceJob(99, 1.0, "alice", "g", (0, 0), (1.0, 1.0)))
    result = run(jobs, tree=TREE, leaf_of_user=LEAF, capacity=[1, 1])
    assert len(result.finished) == 10
    assert all(f.finish_time == f.submit_time for f in result.finished)
