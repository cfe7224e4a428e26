"""Trace loaders: the real SWIM and SWF traces and the bytes-to-tasks rule."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from simulator.workloads.traces import SwimRule, TraceJob, load_swf, load_swim

MIB = 2**20


def raw_swim(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------- SWIM, real


def test_full_swim_trace(swim_path: Path) -> None:
    jobs = load_swim(swim_path)
    assert len(jobs) == 5894
    assert [j.job_id for j in jobs] == list(range(5894))
    times = np.array([j.submit_time for j in jobs])
    assert np.all(np.diff(times) >= 0)
    assert times[0] == 49.0  # job0's offset in the trace's first hour is kept
    assert times[-1] == 86404.0
    assert {j.user for j in jobs} == {"u0"} and {j.group for j in jobs} == {"g0"}


@pytest.mark.parametrize(("start_hour", "hours"), [(0.0, 0.5), (5.0, 1.0), (23.0, None)])
def test_window_selects_and_shifts(swim_path: Path, start_hour: float, hours: float | None) -> None:
    lo = 3600 * start_hour
    hi = math.inf if hours is None else lo + 3600 * hours
    raw = [r for r in raw_swim(swim_path) if lo <= float(r[1]) < hi]
    jobs = load_swim(swim_path, start_hour=start_hour, hours=hours)
    assert [j.job_id for j in jobs] == [int(r[0][3:]) for r in raw]
    assert [j.submit_time for j in jobs] == [float(r[1]) - lo for r in raw]
    assert all(0 <= j.submit_time < hi - lo for j in jobs)


def test_rule_invariants_on_the_real_trace(swim_path: Path) -> None:
    rule = SwimRule()
    jobs = load_swim(swim_path, rule=rule)
    shuffle = {int(r[0][3:]): float(r[4]) for r in raw_swim(swim_path)}
    for job in jobs:
        maps, reduces = job.tasks
        map_s, reduce_s = job.task_duration
        assert 1 <= maps <= rule.max_map_tasks
        assert 0 <= reduces <= rule.max_reduce_tasks
        assert (reduces >= 1) == (shuffle[job.job_id] > 0)
        assert map_s >= rule.min_task_s
        assert (reduce_s >= rule.min_task_s) if reduces else (reduce_s == 0.0)


def test_caps_bound_tasks_but_keep_the_work(swim_path: Path) -> None:
    capped = SwimRule(max_map_tasks=10, max_reduce_tasks=3, overhead_s=0.0, min_task_s=0.0)
    free = SwimRule(max_map_tasks=10**9, max_reduce_tasks=10**9, overhead_s=0.0, min_task_s=0.0)
    a, b = load_swim(swim_path, rule=capped), load_swim(swim_path, rule=free)
    assert max(j.tasks[0] for j in a) == 10 and max(j.tasks[1] for j in a) == 3
    work_a = np.array([[t * d for t, d in zip(j.tasks, j.task_duration, strict=True)] for j in a])
    work_b = np.array([[t * d for t, d in zip(j.tasks, j.task_duration, strict=True)] for j in b])
    np.testing.assert_allclose(work_a, work_b, rtol=1e-9)


def test_user_assignment_is_seeded(swim_path: Path) -> None:
    a = load_swim(swim_path, users=5, groups=2, seed=7)
    b = load_swim(swim_path, users=5, groups=2, seed=7)
    c = load_swim(swim_path, users=5, groups=2, seed=8)
    assert [j.user for j in a] == [j.user for j in b]
    assert [j.user for j in a] != [j.user for j in c]
    assert {j.user for j in a} == {f"u{k}" for k in range(5)}
    assert all(j.group == f"g{int(j.user[1:]) % 2}" for j in a)


def test_a_job_keeps_its_user_in_any_window(swim_path: Path) -> None:
    full = {j.job_id: j.user for j in load_swim(swim_path, users=9, seed=3)}
    window = load_swim(swim_path, users=9, seed=3, start_hour=7, hours=2)
    assert window and all(full[j.job_id] == j.user for j in window)


# ---------------------------------------------------------- SWIM, the rule


@pytest.mark.parametrize(
    ("name", "bytes_", "tasks"),
    [
        ("empty input still one map", (0, 0, 0), (1, 0)),
        ("exactly one block", (64 * MIB, 0, 0), (1, 0)),
        ("one byte over a block", (64 * MIB + 1, 0, 0), (2, 0)),
        ("map-only output is written by the maps", (0, 0, 128 * MIB), (2, 0)),
        ("one shuffled byte needs a reduce", (10, 1, 0), (1, 1)),
        ("shuffle of 2.5 reduce units", (10, 2.5 * 1024 * MIB, 5), (1, 3)),
        ("capped maps", (10**15, 0, 0), (2000, 0)),
        ("capped reduces", (10, 10**15, 0), (1, 500)),
    ],
)
def test_rule_table(name: str, bytes_: tuple[float, float, float], tasks: tuple[int, int]) -> None:
    assert SwimRule().tasks_for(*bytes_) == tasks, name


def test_rule_durations() -> None:
    rule = SwimRule(map_bytes_per_s=1e6, reduce_bytes_per_s=2e6, overhead_s=1.0, min_task_s=3.0)
    map_s, reduce_s = rule.durations_for(64 * MIB, 4e6, 2e6)
    assert map_s == pytest.approx(64 * MIB / 1e6 + 1.0)
    assert reduce_s == pytest.approx((4e6 + 2e6) / 2e6 + 1.0)  # shuffle + output, one reduce
    assert rule.durations_for(1, 0, 0) == (3.0, 0.0)  # the minimum applies


@pytest.mark.parametrize(
    "kwargs",
    [{"block_bytes": 0}, {"max_map_tasks": 0}, {"map_bytes_per_s": 0.0}, {"min_task_s": -1.0}],
)
def test_rule_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SwimRule(**kwargs)  # type: ignore[arg-type]


def test_swim_gzip_and_malformed(tmp_path: Path) -> None:
    good = tmp_path / "t.tsv.gz"
    with gzip.open(good, "wt") as fh:
        fh.write("job0\t5\t5\t100\t0\t10\njob1\t9\t4\t100\t10\t10\n")
    jobs = load_swim(good)
    assert [(j.job_id, j.submit_time, j.tasks) for j in jobs] == [(0, 5.0, (1, 0)), (1, 9.0, (1, 1))]
    bad = tmp_path / "bad.tsv"
    bad.write_text("job0\t5\t5\t100\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:1"):
        load_swim(bad)
    with pytest.raises(ValueError):
        load_swim(good, users=0)
    with pytest.raises(ValueError):
        load_swim(good, hours=0)


# -------------------------------------------------------------------- SWF

SWF_TEXT = """\
; Version: 2.2
; a header comment
1 100 5 30 4 -1 -1 4 60 -1 1 7 3 -1 1 -1 -1 -1
2 110 5 0 4 -1 -1 4 60 -1 0 7 3 -1 1 -1 -1 -1
3 120 5 12 -1 -1 -1 2 60 -1 1 -1 -1 -1 1 -1 -1 -1
4 130 5 12 -1 -1 -1 -1 60 -1 1 8 3 -1 1 -1 -1 -1
5 7300 5 9 1 -1 -1 1 60 -1 1 8 4 -1 1 -1 -1 -1
"""


@pytest.mark.parametrize("compressed", [False, True])
def test_swf_fields_and_skips(tmp_path: Path, compressed: bool) -> None:
    path = tmp_path / ("t.swf.gz" if compressed else "t.swf")
    if compressed:
        with gzip.open(path, "wt") as fh:
            fh.write(SWF_TEXT)
    else:
        path.write_text(SWF_TEXT)
    jobs = load_swf(path)
    # job 2: zero run time, job 4: no processor count -> skipped.
    assert jobs == [
        TraceJob(1, 0.0, "u7", "g3", (4,), (30.0,)),
        TraceJob(3, 20.0, "unknown", "unknown", (2,), (12.0,)),  # requested procs used
        TraceJob(5, 7200.0, "u8", "g4", (1,), (9.0,)),
    ]
    assert [j.job_id for j in load_swf(path, start_hour=1.0)] == [5]
    # the window opens at first + 1 h = 3700 s; job 5 keeps its offset in it
    assert load_swf(path, start_hour=1.0)[0].submit_time == 3600.0
    assert [j.job_id for j in load_swf(path, max_jobs=2)] == [1, 3]


def test_swf_short_line(tmp_path: Path) -> None:
    path = tmp_path / "short.swf"
    path.write_text("1 2 3\n")
    with pytest.raises(ValueError, match="18 fields"):
        load_swf(path)


def test_kth_sp2_trace(shared_traces: Path) -> None:
    jobs = load_swf(shared_traces / "KTH-SP2-1996-2.1-cln.swf.gz")
    # 28,476 records; 9 have a zero run time and are skipped.
    assert len(jobs) == 28467
    times = np.array([j.submit_time for j in jobs])
    assert times[0] == 0.0 and np.all(np.diff(times) >= 0)
    assert all(1 <= j.tasks[0] <= 100 for j in jobs)  # MaxProcs: 100
    assert all(j.task_duration[0] > 0 for j in jobs)
    assert all(j.user.startswith("u") and j.group.startswith("g") for j in jobs)
    assert len({j.user for j in jobs}) > 100
    week = load_swf(shared_traces / "KTH-SP2-1996-2.1-cln.swf.gz", start_hour=24, hours=168)
    assert week and all(0 <= j.submit_time < 168 * 3600 for j in week)
