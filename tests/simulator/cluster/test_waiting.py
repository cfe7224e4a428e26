"""Why a job waits and the fair-share table (simulator.cluster.waiting) on the paper's
starvation example (paper 002, Sec. 5.2.1, Fig. 2): 12 units, G1 = {A, B},
G2 = {C, D}, unit tasks; demands 200, 10, 50, 60, then 20, 60, 40, 80 at t = 27."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from simulator.cluster.model import Cluster
from simulator.cluster.waiting import estimate_start, explain_wait, fairshare_rows
from simulator.records import JobSpec

FIG1B = {"root.G1.A": 1.0, "root.G1.B": 1.0, "root.G2.C": 1.0, "root.G2.D": 1.0}


def starvation_cluster(t_wait: float) -> Cluster:
    cluster = Cluster([12], QueueTree.from_paths(FIG1B), policy="hltrf", t_wait=t_wait, sample_interval=math.inf)
    for leaf, n in enumerate([200, 10, 50, 60]):
        cluster.submit(JobSpec(leaf + 1, leaf, (n,), (1.0,), 0.0))
    for leaf, n in enumerate([20, 60, 40, 80]):
        cluster.submit(JobSpec(leaf + 11, leaf, (n,), (1.0,), 27.0))
    cluster.advance(27.0)
    return cluster


def test_naive_hierarchy_explains_b_behind_g2_by_the_usage_gap() -> None:
    # given: the naive hierarchy just after the second wave (G1 used 210, G2 110)
    cluster = starvation_cluster(math.inf)
    # when
    why = explain_wait(cluster, 12, 0)  # B's new job
    # then: at the top level G2 is ahead of G1 by its usage gap per sibling fraction (1/2):
    # G1 used 210, G2 110 plus the 12 unit tasks it was just granted at t = 27
    top = why.levels[0]
    assert (top.queue, top.ahead) == ("root.G1", "root.G2")
    assert top.gap == pytest.approx((210 - (110 + 12)) / 0.5)
    assert why.blocking is top
    assert why.levels[1].queue == "root.G1.B" and why.levels[1].ahead is None  # inside G1, B is first
    assert why.lowest and why.t_wait == math.inf  # B is the starved candidate, but the timeout is off
    assert why.position == 1 and why.jobs_ahead == ()
    assert why.share == pytest.approx(3.0) and why.running == 0


def test_position_counts_older_jobs_of_the_leaf() -> None:
    cluster = starvation_cluster(math.inf)
    cluster.submit(JobSpec(99, 1, (5,), (1.0,), cluster.now))
    assert explain_wait(cluster, 99, 0).jobs_ahead == (12,)
    assert explain_wait(cluster, 99, 0).position == 2


@pytest.mark.parametrize("t_wait", [math.inf, 0.0, 2.0, 5.0])
def test_estimated_start_is_when_it_really_starts(t_wait: float) -> None:
    # given: no other arrival, so running the original forward must agree with the estimate
    cluster = starvation_cluster(t_wait)
    estimate = estimate_start(cluster, 12)
    while sum(cluster.job_state(12)[1]) + sum(cluster.job_state(12)[2]) == 0:
        cluster.advance(cluster.next_event_time())
    assert estimate == cluster.now
    if t_wait == math.inf:
        assert estimate is not None and estimate - 27 >= (210 - 110) // 12  # B starves at least 8 slots
    else:
        assert estimate is not None and estimate - 27 <= t_wait + 1


def test_estimate_does_not_touch_the_cluster() -> None:
    cluster = starvation_cluster(math.inf)
    before = cluster.to_state()
    estimate_start(cluster, 12)
    assert cluster.to_state() == before


def test_fairshare_rows_aggregate_the_tree() -> None:
    cluster = starvation_cluster(math.inf)
    rows = {r["queue"]: r for r in fairshare_rows(cluster, 0)}
    assert list(rows) == ["root", "root.G1", "root.G1.A", "root.G1.B", "root.G2", "root.G2.C", "root.G2.D"]
    assert rows["root.G1"]["measured"] == pytest.approx(210) and rows["root.G2"]["measured"] == pytest.approx(110)
    assert rows["root.G1.A"]["share"] == pytest.approx(3.0) and rows["root"]["share"] == pytest.approx(12.0)
    assert rows["root"]["running"] == 12
    assert rows["root.G1"]["demand"] == rows["root.G1.A"]["demand"] + rows["root.G1.B"]["demand"]
    # A ran 200 unit-seconds against an entitlement of at most 3 per second: a large sharing benefit;
    # B got its 10 within its share (rho 1), then starves under the naive hierarchy (rho < 1)
    assert rows["root.G1.A"]["rho"] > 1 and rows["root.G1.B"]["rho"] == pytest.approx(1.0)
    cluster.advance(30.0)
    assert {r["queue"]: r for r in fairshare_rows(cluster, 0)}["root.G1.B"]["rho"] < 1


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 30), min_size=4, max_size=4),
    later=st.lists(st.integers(1, 30), min_size=4, max_size=4),
    policy=st.sampled_from(["fifo", "static", "mlrf", "ltrf", "hltrf"]),
    cap=st.integers(1, 8),
)
def test_estimate_matches_the_run_for_every_policy(sizes: list[int], later: list[int], policy: str, cap: int) -> None:
    cluster = Cluster([cap], QueueTree.from_paths(FIG1B), policy=policy, t_wait=2.0, sample_interval=math.inf)
    for leaf, n in enumerate(sizes):
        cluster.submit(JobSpec(leaf + 1, leaf, (n,), (1.5,), 0.0))
    for leaf, n in enumerate(later):
        cluster.submit(JobSpec(leaf + 11, leaf, (n,), (1.0,), 3.0))
    cluster.advance(3.0)
    for job in (11, 12, 13, 14):
        estimate = estimate_start(cluster, job)
        copy = Cluster.from_state(cluster.tree, cluster.to_state())
        while sum(copy.job_state(job)[1]) + sum(copy.job_state(job)[2]) == 0:
            if math.isinf(copy.next_event_time()):  # never starts (e.g. a static quota of 0 units)
                break
            copy.advance(copy.next_event_time())
        started = sum(copy.job_state(job)[1]) + sum(copy.job_state(job)[2]) > 0
        assert estimate == (copy.now if started else None)
