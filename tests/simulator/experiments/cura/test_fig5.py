"""Cura's workload, baselines and the registered Fig. 5 experiment (paper 004, Sec. IV)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cura.profiles import PAPER_PROFILES, PAPER_SIZES, PAPER_VM_TYPES
from scheduler.cura.vm_aware import CuraJob
from simulator import experiments
from simulator.cura.baselines import cheapest, run_dedicated, run_per_job, servers_needed
from simulator.cura.workload import CURA_VM_TYPES, generate, job_classes
from simulator.experiments.cura.fig5 import TRACE


def test_job_classes_and_workload_are_deterministic_and_feasible() -> None:
    classes = job_classes(TRACE, n=50, seed=0)
    assert len(classes) == 50 and len({c.trace_job for c in classes}) == 50
    prefs = {int(np.argmax(c.affinity)) for c in classes}
    assert prefs == set(range(len(CURA_VM_TYPES)))  # every VM type is some class's best fit
    a = generate(classes, jobs=300, span=150.0, max_deadline=100.0, seed=3)
    b = generate(classes, jobs=300, span=150.0, max_deadline=100.0, seed=3)
    assert [(j.arrival, j.deadline, j.customer) for j in a] == [(j.arrival, j.deadline, j.customer) for j in b]
    for j in a:
        # every job can meet its deadline on a per-job cluster booted at arrival (60 s boot + 10 s start)
        assert j.arrival + 70.0 + float(j.runtime.min()) <= j.deadline + 1e-9
        assert j.deadline - j.arrival <= 70.0 + float(j.runtime.min()) + 100.0 + 1e-9


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 200), st.integers(1, 200))
def test_servers_needed_finds_the_threshold_of_a_monotone_predicate(threshold: int, hi: int) -> None:
    calls: list[int] = []

    def ok(n: int) -> bool:
        calls.append(n)
        return n >= threshold

    if threshold > hi:
        with pytest.raises(ValueError):
            servers_needed(ok, 1, hi)
        return
    assert servers_needed(ok, 1, hi) == threshold
    assert len(calls) <= math.ceil(math.log2(hi)) + 3


def _jobs(n: int, seed: int) -> list[CuraJob]:
    rng = np.random.default_rng(seed)
    arrivals = np.sort(rng.uniform(0, 1000, n))
    return [
        CuraJob(i, float(a), float(a + rng.uniform(400, 1500)), PAPER_PROFILES[int(rng.integers(1, 5))].runtime, int(rng.integers(0, 3)))
        for i, a in enumerate(arrivals)
    ]


def test_per_job_clusters_run_each_job_at_its_own_cheapest_configuration() -> None:
    jobs = _jobs(30, 0)
    run = run_per_job(jobs, PAPER_VM_TYPES, PAPER_SIZES, servers=10_000, boot_s=60.0, framework_start=10.0)
    for job, o in zip(jobs, run.outcomes, strict=True):
        v, s, rt, _ = cheapest(job, PAPER_VM_TYPES, PAPER_SIZES, 70.0)
        assert (o.vm_type, o.vms, o.start, o.end) == (v, PAPER_SIZES[s], job.arrival, job.arrival + rt)  # no wait with ample servers
        assert o.met
    few = run_per_job(jobs, PAPER_VM_TYPES, PAPER_SIZES, servers=5, boot_s=60.0, framework_start=10.0)
    starts = [o.start for o in few.outcomes if o.ran]
    assert starts == sorted(starts)  # FIFO
    assert not all(o.met for o in few.outcomes)


def test_dedicated_clusters_are_sized_for_each_customers_peak() -> None:
    jobs = _jobs(40, 1)
    run = run_dedicated(jobs, PAPER_VM_TYPES, PAPER_SIZES, cores_per_server=16, framework_start=10.0)
    assert all(o.met and o.start == o.arrival for o in run.outcomes)
    # brute force: peak VMs per (customer, type) over every start instant
    cores = 0
    for c in {j.customer for j in jobs}:
        for v, t in enumerate(PAPER_VM_TYPES):
            mine = [o for o in run.outcomes if o.customer == c and o.vm_type == v]
            peak = max((sum(x.vms for x in mine if x.start <= o.start < x.end) for o in mine), default=0)
            cores += peak * t.vcpus
    assert run.servers == math.ceil(cores / 16)


def test_fig5_experiment_small_run() -> None:
    result = experiments.run("cura_fig5", {"jobs": 120, "span_s": 60.0, "customers": 10, "max_deadlines_s": [300.0]})
    rows = {r[1]: r for r in result["tables"][0]["rows"]}
    assert set(rows) == {"Cura", "Cura, no reconfiguration", "per-job clusters", "dedicated clusters"}
    for r in rows.values():
        assert r[3] == 1.0  # every approach meets every deadline on the servers it was given
    assert rows["Cura"][2] <= rows["dedicated clusters"][2]
    assert len(result["figures"]) == 5 and "fewer servers" in result["summary"]
    assert {f["layout"]["xaxis"]["title"]["text"] for f in result["figures"][:4]} == {"maximum deadline slack (s)"}
