"""The lab's pure side: trace slices and tenant mapping, downsampling, intervals over seeds,
and the runner's progress callback (an observer that never changes the run)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from simulator.experiments.ltrf.fb2009 import _tree
from simulator.runner import MarketParams, run
from simulator.whatif.compare import estimate, summary_table
from simulator.whatif.run import FB2009, ConfigSpec, WorkloadSpec, check_capacity, load_workload, minmax_downsample, simulate
from simulator.workloads.traces import load_swim


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=3000), st.integers(1, 50))
@settings(max_examples=60, deadline=None)
def test_minmax_downsample_keeps_every_bucket_extreme_in_time_order(ys: list[float], points: int) -> None:
    x = np.arange(len(ys), dtype=np.float64)
    y = np.array(ys)
    dx, dy = minmax_downsample(x, y, points)
    assert len(dx) <= max(len(ys), 2 * points) and np.all(np.diff(dx) > 0)
    assert dy.max() == y.max() and dy.min() == y.min()  # spikes survive
    assert np.array_equal(y[dx.astype(int)], dy)


@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=12))
def test_estimate_is_the_student_t_interval(values: list[float]) -> None:
    e = estimate(values)
    assert e.n == len(values) and e.mean == pytest.approx(np.mean(values))
    if np.std(values) > 0:
        lo, hi = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
        assert e.half_width == pytest.approx((hi - lo) / 2, rel=1e-9, abs=1e-9)


def test_estimate_of_one_or_no_value_has_no_interval() -> None:
    assert math.isnan(estimate([2.0]).half_width) and estimate([2.0]).text() == "2"
    assert estimate([None, math.nan]).n == 0 and estimate([]).text() == "—"


def test_summary_table_groups_replicas_by_label_in_first_seen_order() -> None:
    runs = [("b", 0, {"revenue": 1.0}), ("a", 0, {"revenue": 3.0}), ("b", 1, {"revenue": 2.0})]
    table = summary_table(runs)
    assert table["columns"] == ["configuration", "seeds", "revenue (money)"]
    assert [r[:2] for r in table["rows"]] == [["b", 2], ["a", 1]]
    assert table["estimates"]["b"]["revenue (money)"][0] == pytest.approx(1.5)


def test_the_slice_scaling_and_tenant_mapping_follow_the_spec() -> None:
    base = load_workload(WorkloadSpec(hours=1.0, tenants=3, groups=1))
    fast = load_workload(WorkloadSpec(hours=1.0, tenants=3, groups=1, time_scale=0.5))
    assert [j.job_id for j in fast] == [j.job_id for j in base]
    assert [j.submit_time for j in fast] == pytest.approx([0.5 * j.submit_time for j in base])
    assert {j.user for j in base} <= {"u0", "u1", "u2"}
    assert len(load_workload(WorkloadSpec(hours=1.0, max_jobs=5))) == 5
    with pytest.raises(ValueError, match=r"^capacity: the trace has 2"):
        check_capacity(base, [10])
    with pytest.raises(ValueError, match=r"^time_scale"):
        load_workload(WorkloadSpec(time_scale=0.0))


def test_an_swf_trace_maps_each_user_to_one_tenant(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = [f"{k} {10 * k} 0 {100 + k} 2 -1 -1 2 -1 -1 1 {k % 5} 1 -1 -1 -1 -1 -1" for k in range(1, 30)]
    path = tmp_path / "t.swf"
    path.write_text("; header\n" + "\n".join(rows) + "\n")
    jobs = load_workload(WorkloadSpec(trace=str(path), hours=1.0, tenants=3, groups=1))
    tenant_of: dict[int, set[str]] = {}
    for k, job in zip(range(1, 30), jobs, strict=True):
        tenant_of.setdefault(k % 5, set()).add(job.user)
    assert all(len(t) == 1 for t in tenant_of.values())
    _, result = simulate(WorkloadSpec(trace=str(path), hours=1.0, tenants=3, groups=1), [4], ConfigSpec())
    assert len(result.finished) == 29


def test_the_progress_callback_observes_without_changing_the_run() -> None:
    jobs = load_swim(FB2009, hours=0.5, users=4, groups=2, seed=0)
    tree, leaf = _tree(4)
    seen: list[tuple[float, int, int]] = []
    params = MarketParams(seed=1, t_wait=30.0)
    plain = run(jobs, tree=tree, leaf_of_user=leaf, capacity=[20, 10], params=params)
    watched = run(jobs, tree=tree, leaf_of_user=leaf, capacity=[20, 10], params=params, progress=lambda *a: seen.append(a))
    assert watched.summary() == plain.summary() and watched.charges == plain.charges
    times, events, submitted = zip(*seen, strict=True)
    assert list(times) == sorted(times) and list(events) == sorted(events) and list(submitted) == sorted(submitted)
    assert submitted[-1] == len(jobs) and events[-1] == len(jobs) + len(plain.finished)


def test_a_raising_callback_aborts_the_run() -> None:
    jobs = load_swim(FB2009, hours=0.5, users=4, groups=2, seed=0)
    tree, leaf = _tree(4)

    class Stop(Exception):
        pass

    def stop(now: float, events: int, submitted: int) -> None:
        if events >= 5:
            raise Stop

    with pytest.raises(Stop):
        run(jobs, tree=tree, leaf_of_user=leaf, capacity=[20, 10], progress=stop)


def test_a_stored_result_stays_within_the_point_budget() -> None:
    # one fairness sample per simulated second over an hour: 3,600 samples, more than the cap
    from simulator.experiments import MAX_POINTS_PER_TRACE
    from simulator.whatif.run import MAX_SERIES_POINTS, compact_result, job_terms, leaf_names

    spec = WorkloadSpec(hours=1.0, tenants=4)
    jobs, result = simulate(spec, [20, 10], ConfigSpec(sample_interval=1.0))
    assert len(result.samples) > 2 * MAX_SERIES_POINTS
    out = compact_result(jobs, result, leaf_names(spec), job_terms(spec, ConfigSpec(sample_interval=1.0), jobs, 2))
    lengths = [len(out["series"]["t"]), *(len(u) for u in out["series"]["utilisation"]), *(len(x) for x in out["prices"]["t"])]
    assert max(lengths) <= min(2 * MAX_SERIES_POINTS, MAX_POINTS_PER_TRACE)
    assert len(out["series"]["running_jobs"]) == len(out["series"]["t"]) and len(out["jobs"]["job_id"]) == len(jobs)
    # the worst loss is over every sample, not only the plotted ones, and never above the final one
    worst = min(float(np.sum(s.loss)) for s in result.samples)
    assert out["metrics"]["worst_sharing_loss"] == pytest.approx(worst, abs=1e-6)
    assert out["metrics"]["worst_sharing_loss"] <= out["metrics"]["sharing_loss"] + 1e-9
    assert out["metrics"]["worst_sharing_loss"] <= min(v for v in out["series"]["loss"] if v is not None) + 1e-3
