"""Welfare, realised utility and deadline flags of lab runs (simulator.outcomes), against
by-hand values on tiny cases and brute-force checks on real runs."""

from __future__ import annotations

import math

import pytest

from simulator.outcomes import deadline_met, realised_utility, trace_terms, utility_total, welfare
from simulator.records import JobFinished
from simulator.runner import MarketParams, run
from simulator.whatif.run import ConfigSpec, WorkloadSpec, compact_result, job_terms, leaf_names, queue_tree, simulate
from simulator.workloads.synthetic import GeneratorSpec, JobTerms, generate
from simulator.workloads.traces import TraceJob


def _two_jobs_one_slot() -> tuple[list[TraceJob], MarketParams]:
    # one slot, FIFO everywhere: job 0 runs [0, 10), job 1 waits and runs [10, 20)
    jobs = [TraceJob(0, 0.0, "u0", "g0", (1,), (10.0,)), TraceJob(1, 1.0, "u0", "g0", (1,), (10.0,))]
    params = MarketParams(fairshare="fifo", dispatch="fifo", budget=lambda j: [5.0, 7.0][j.job_id], weights=lambda j: (2.0,),
                          utility="linear")  # fmt: skip
    return jobs, params


def test_welfare_of_a_tiny_run_is_the_value_of_the_jobs_done_in_time() -> None:
    jobs, params = _two_jobs_one_slot()
    tree, leaf = queue_tree(1, 1)
    result = run(jobs, tree=tree, leaf_of_user=leaf, capacity=[1], params=params)
    assert [(f.job_id, f.finish_time) for f in result.finished] == [(0, 10.0), (1, 20.0)]
    # deadline factor 1.5 of a 10 s job: job 0 by 15 (finished 10: met), job 1 by 16 (finished 20: missed)
    terms = trace_terms(jobs, {0: 5.0, 1: 7.0}, 1.5, {0: (2.0,), 1: (2.0,)}, {0: "linear", 1: "linear"})
    assert [terms[0].deadline, terms[1].deadline] == [15.0, 16.0]
    met = deadline_met(jobs, result.finished, terms)
    assert met == [True, False]
    w = welfare(jobs, met, terms)
    assert (w.welfare, w.requested, w.met, w.jobs) == (5.0, 12.0, 1, 2)
    assert w.share == pytest.approx(5 / 12) and w.met_fraction == 0.5
    out = compact_result(jobs, result, ["u0"], terms)
    assert out["metrics"]["welfare"] == 5.0 and out["metrics"]["welfare_share"] == pytest.approx(5 / 12, abs=1e-6)
    assert out["metrics"]["deadline_met_fraction"] == 0.5
    assert out["jobs"]["deadline_met"] == [True, False] and out["jobs"]["deadline_s"] == [15.0, 16.0]


def test_realised_utility_is_the_bids_utility_at_the_average_shares() -> None:
    jobs = [TraceJob(0, 0.0, "u0", "g0", (2, 1), (1.0, 1.0)), TraceJob(1, 0.0, "u0", "g0", (2, 0), (1.0, 0.0)),
            TraceJob(2, 0.0, "u0", "g0", (1, 1), (1.0, 1.0))]  # fmt: skip
    terms = {0: JobTerms(1.0, 9.0, 1.0, (3.0, 2.0), "linear"), 1: JobTerms(1.0, 9.0, 1.0, (1.0, 1.0), "log"),
             2: JobTerms(1.0, 9.0, 1.0, (1.0, 1.0), "log")}  # fmt: skip
    u = realised_utility(jobs, {0: [0.5, 0.25], 1: [0.5, 0.0]}, terms)
    # 3 * 0.5 + 2 * 0.25; job 1 has no reduce task, so only log 0.5 counts; job 2 never finished
    assert u[0] == pytest.approx(2.0) and u[1] == pytest.approx(math.log(0.5)) and u[2] is None
    assert utility_total(u) == pytest.approx(2.0 + math.log(0.5))
    assert utility_total([1.0, -math.inf, None]) == 1.0


def test_deadline_flags_match_a_brute_force_check_and_table1s_slowdown_reading() -> None:
    # Table 1 on a cluster a third of the paper's: queues build, some jobs miss their deadline
    spec = WorkloadSpec(generator="abacus_table1", hours=0.5, deadline_factor=2.0, seed=4)
    config = ConfigSpec(sample_interval=600.0)
    jobs, result = simulate(spec, [10, 4], config)
    terms = job_terms(spec, config, jobs, 2)
    out = compact_result(jobs, result, leaf_names(spec), terms)
    flags = out["jobs"]["deadline_met"]
    brute = []
    for j in jobs:
        finish = [f.finish_time for f in result.finished if f.job_id == j.job_id]
        brute.append(len(finish) == 1 and finish[0] <= terms[j.job_id].deadline)
    assert flags == brute
    assert 0 < sum(flags) < len(flags)  # the case is not degenerate
    for j, ok in zip(jobs, flags, strict=True):  # Table 1: met iff response <= factor x (map + reduce task time)
        f = next(f for f in result.finished if f.job_id == j.job_id)
        assert ok == (f.finish_time - f.submit_time <= 2.0 * sum(j.task_duration) + 1e-9)
    assert out["metrics"]["deadline_met_fraction"] == pytest.approx(sum(brute) / len(brute), abs=1e-6)
    assert out["metrics"]["welfare"] == pytest.approx(200.0 * sum(brute))  # each Table 1 job is worth its $200 budget


def test_a_never_finished_job_missed_its_deadline() -> None:
    jobs = [TraceJob(0, 0.0, "u0", "g0", (1,), (10.0,)), TraceJob(1, 0.0, "u0", "g0", (1,), (10.0,))]
    terms = {k: JobTerms(1.0, 1e9, 1.0, (1.0,), "log") for k in (0, 1)}
    assert deadline_met(jobs, [JobFinished(0, 0.0, 0.0, 10.0)], terms) == [True, False]


def test_a_generated_workload_runs_as_a_lab_study_run_with_its_own_terms() -> None:
    spec = WorkloadSpec(generator="era_classes", hours=1.0, tenants=3, seed=2)
    config = ConfigSpec(sample_interval=600.0)
    jobs, result = simulate(spec, [20], config)
    assert [j.job_id for j in jobs] == [j.job_id for j in generate(spec.synthetic()).jobs]
    out = compact_result(jobs, result, leaf_names(spec), job_terms(spec, config, jobs, 1))
    gen = generate(GeneratorSpec("era_classes", hours=1.0, tenants=3, seed=2))
    assert out["jobs"]["value"] == [round(gen.terms[j.job_id].value, 4) for j in jobs]
    assert out["metrics"]["welfare"] <= sum(t.value for t in gen.terms.values()) + 1e-6
