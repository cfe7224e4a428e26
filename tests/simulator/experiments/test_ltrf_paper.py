"""Paper 002's own workload (Sec. 7.2, synthesised), Figs. 8 and 10, and the KTH isolation: properties over five seeds."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from scheduler.fairshare.fairness import QueueTree
from simulator import experiments
from simulator.experiments.fidelity import VERDICTS
from simulator.experiments.ltrf.macro import overloaded_seconds, simulate, starvation
from simulator.experiments.ltrf.paper import _hierarchy
from simulator.experiments.report import QUICK
from simulator.workloads.ltyarn import CONTAINERS, PURDUE_INTERVAL_S, SPARK_GAP_S, TABLE_3, MacroJob, macro_workload

TRACE = Path(__file__).resolve().parents[3] / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"


def test_the_workloads_follow_the_papers_job_mix() -> None:
    w = macro_workload(3, TRACE)
    fb = w["facebook"]
    assert len(fb) == 100 and sorted(j.phases[0][0] for j in fb) == sorted(m for m, _, n in TABLE_3 for _ in range(n))
    assert [j.submit for j in w["purdue"]] == [k * PURDUE_INTERVAL_S for k in range(5)]
    assert len(w["tpch"]) == 20 and all(j.submit is None for j in w["tpch"])  # one after another
    assert len(w["spark"]) == 20 and all(j.gap == SPARK_GAP_S for j in w["spark"])
    assert min(j.submit or 0.0 for j in fb) == 0.0


def test_a_chain_waits_for_the_previous_job_and_reduces_wait_for_maps() -> None:
    tree = QueueTree.from_paths({"root.q": 1.0})
    jobs = [MacroJob("a", ((4, 10.0), (2, 5.0)), None), MacroJob("b", ((1, 3.0),), None, gap=7.0)]
    run = simulate({"q": jobs}, tree, {"q": 0}, capacity=4, policy="fifo")
    assert run.jobs["q"] == [(0.0, 15.0), (22.0, 25.0)]  # maps 0-10, reduces 10-15; b 7 s later for 3 s


def test_overloaded_seconds_count_the_time_demand_exceeds_the_share() -> None:
    # 4 containers; one job of 8 tasks x 10 s at 0: 4 running + 4 pending in [0, 10), 4 running in [10, 20):
    # above a share of 5 for 10 s, above 3 for 20 s, nothing after the run
    tree = QueueTree.from_paths({"root.q": 1.0})
    run = simulate({"q": [MacroJob("a", ((8, 10.0),), 0.0)]}, tree, {"q": 0}, capacity=4, policy="fifo", interval=1.0)
    assert overloaded_seconds(run, 0, 5.0, 30.0) == pytest.approx(10.0)
    assert overloaded_seconds(run, 0, 3.0, 30.0) == pytest.approx(20.0)
    assert overloaded_seconds(run, 0, 3.0, 15.0) == pytest.approx(15.0)  # only the window counts


@pytest.mark.parametrize("seed", range(5))
def test_without_a_timeout_the_sibling_of_an_early_heavy_queue_waits_longer(seed: int) -> None:
    tree, leaf = _hierarchy()
    w = macro_workload(seed, TRACE, fb_time_scale=0.2)
    starts = {"facebook": 0.0, "tpch": 900.0, "purdue": 900.0, "spark": 900.0}
    naive = simulate(w, tree, leaf, capacity=CONTAINERS, policy="hltrf", t_wait=math.inf, starts=starts)
    ltrf = simulate(w, tree, leaf, capacity=CONTAINERS, policy="hltrf", t_wait=0.0, starts=starts)
    assert starvation(ltrf, "tpch", 900.0) < 10.0 <= starvation(naive, "tpch", 900.0)  # paper 002, Sec. 7.6, Fig. 10


@pytest.mark.parametrize("name", ["ltrf_fig8", "ltrf_fig10", "ltrf_kth_isolation"])
def test_the_experiments_report_rows_beside_the_paper(name: str, shared_traces: object) -> None:
    result = experiments.run(name, QUICK[name])
    experiments.check_result(result)
    assert result["headlines"] and all(h["verdict"] in VERDICTS for h in result["headlines"])
    assert result["tables"][1]["title"].startswith("Set-up")
