"""The "published schedulers" study (docs/published_schedulers.md), at its quick size: every trace, every configuration."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from simulator import experiments
from simulator.experiments.published import report, setup
from simulator.experiments.published.report import METRICS
from simulator.experiments.published.setup import LABELS, cluster_for, make_cell, offered_work
from simulator.experiments.published.study import cells, policies
from simulator.workloads.traces import TraceJob


@pytest.fixture(scope="module")
def quick(shared_traces: Path) -> dict[str, Any]:
    return experiments.run("published_schedulers", {"quick": True, "seeds": 2})


def _rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    runs = next(t for t in result["tables"] if t["title"] == "Every run")
    return [dict(zip(runs["columns"], row, strict=True)) for row in runs["rows"]]


def test_every_configuration_runs_on_every_window_of_every_trace(quick: dict[str, Any]) -> None:
    rows = _rows(quick)
    assert {(r["trace"], r["seed"], r["configuration"]) for r in rows} == {
        (t, s, p) for t in ("FB-2009", "KTH-SP2", "LCG") for s in (0, 1) for p in LABELS
    }
    for r in rows:
        assert 0.0 < r["utilisation over the window"] <= 1.0 + 1e-9
        assert r["max finish-time fairness rho"] > 0 and 0.0 <= r["jobs with rho > 1 (fraction)"] <= 1.0
        assert r["sharing loss Ω (Eq. 5)"] <= 1e-9 <= r["sharing benefit Ψ (Eq. 4)"] + 2e-9
        assert 0.0 <= r["welfare / requested value"] <= 1.0
        # payments only where the configuration has money
        assert (r["payments (money)"] is not None) == (r["configuration"] in {c.label for c in setup.CONFIGS if c.money})
    assert len(quick["figures"]) == 8
    experiments.check_result(quick)


def test_kth_has_a_flat_tree_so_h_ltrf_is_ltrf(quick: dict[str, Any]) -> None:
    # paper 002, Theorem 1: on a one-level tree H-LTRF's walk is LTRF's choice, whatever T_wait
    rows = [r for r in _rows(quick) if r["trace"] == "KTH-SP2"]
    for seed in (0, 1):
        ltrf, hltrf = ({k: v for k, v in r.items() if k != "configuration"} for r in rows
                       if r["seed"] == seed and r["configuration"] in ("LTRF", "H-LTRF"))
        assert ltrf == hltrf


def test_each_paragraph_names_the_winner_of_its_table(quick: dict[str, Any]) -> None:
    for trace, paragraph in quick["paragraphs"].items():
        summary = next(t for t in quick["tables"] if t["title"].startswith(f"{trace}: metrics"))
        export = next(t for t in quick["tables"] if t["title"].startswith("All estimates"))
        means = {r[1]: r[3] for r in export["rows"] if r[0] == trace and r[2] == "mean JCT (sim s)"}
        fastest = min(means.values())
        winners = [p for p, v in means.items() if v == fastest]
        assert paragraph.startswith(trace) and any(w in paragraph.split(" has the lowest")[0] for w in winners)
        assert len(summary["rows"]) == len(LABELS)
        assert "utilisation over the window" in paragraph


def test_every_queue_level_policy_runs_fifo_and_equal_share_and_the_paragraphs_read_the_controls(quick: dict[str, Any]) -> None:
    by_label = {c.label: c for c in setup.CONFIGS}
    for policy in ("H-LTRF", "DRF", "Slurm", "Karma"):
        fifo, share = by_label[policy], by_label[f"{policy} + equal share"]
        assert (fifo.params.dispatch, share.params.dispatch) == ("fifo", "stride")
        assert replace(fifo.params, dispatch="stride") == share.params  # nothing else differs
    # the size oracle's control reads what Themis' oracle variant reads; the markets are named as markets
    assert by_label["SRPT (exact sizes)"].sizes == by_label["Themis (exact sizes)"].sizes == "exact job sizes"
    assert {c.label for c in setup.CONFIGS if c.money} == {"Abacus over H-LTRF", "ERA reservations over H-LTRF"}
    for trace, paragraph in quick["paragraphs"].items():
        assert f"{trace}, controls" in paragraph
        assert "Themis (exact sizes) vs SRPT (exact sizes)" in paragraph and "Abacus over H-LTRF vs H-LTRF + equal share" in paragraph


def test_cells_and_policies_are_validated() -> None:
    assert cells({"traces": ["kth", "fb2009"], "seeds": 2}) == [("kth", 0), ("kth", 1), ("fb2009", 0), ("fb2009", 1)]
    with pytest.raises(ValueError, match="traces"):
        cells({"traces": ["swim"], "seeds": 1})
    assert policies({"policies": ["Themis (exact sizes)"]}) == ("H-LTRF", "Themis (exact sizes)")  # the paired baseline always runs
    with pytest.raises(ValueError, match="policies"):
        policies({"policies": ["CFS"]})


def test_capacity_follows_the_offered_load_and_wide_jobs_compress_arrivals() -> None:
    # 10 one-processor jobs of 360 s, one every 360 s over an hour: offered 3600 unit-s -> ceil(3600 / 3240) = 2 units
    jobs = [TraceJob(k, 360.0 * k, "u", "g", (1,), (360.0,)) for k in range(10)]
    capacity, scale, same = cluster_for(jobs, 1.0)
    assert capacity == [2] and scale == 1.0 and same == jobs
    # one 4-processor job makes C = 4: arrivals are squeezed until the window's load is 0.9 again
    wide = [*jobs, TraceJob(99, 0.0, "v", "g", (4,), (360.0,))]
    capacity, scale, squeezed = cluster_for(wide, 1.0)
    assert capacity == [4] and scale < 1.0
    assert offered_work(squeezed, 3600.0 * scale)[0] / (4 * 3600.0 * scale) == pytest.approx(0.9, rel=1e-3)


def test_offered_work_starts_a_later_stage_when_the_one_before_ends() -> None:
    # 2 maps of 100 s then 3 reduces of 50 s, submitted at 1000 s; in a 1150 s window the maps run
    # 1000-1100 (200 unit-s) and the reduces 1100-1150 (3 x 50 unit-s), not 1000-1050
    job = TraceJob(1, 1000.0, "u", "g", (2, 3), (100.0, 50.0))
    assert offered_work([job], 1150.0) == pytest.approx([200.0, 150.0])
    assert offered_work([job], 1120.0) == pytest.approx([200.0, 60.0])  # 20 s of each reduce fall inside
    reduce_only = TraceJob(2, 0.0, "u", "g", (0, 4), (0.0, 10.0))  # no map stage: its reduces start at submit
    assert offered_work([reduce_only], 5.0) == pytest.approx([0.0, 20.0])


def test_calibration_keeps_the_offered_load_stable_and_fills_each_type_or_stops_at_its_floor(
        shared_traces: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setup, "CALIBRATION_STEPS", 12)  # run it to its fixed point
    for trace, seed in [("fb2009", 0), ("fb2009", 1), ("lcg", 0)]:
        cell = make_cell(trace, seed, True)
        offered = offered_work(cell.jobs, cell.window_s)
        busy = setup.busy_fractions(cell, setup.REFERENCE)
        first = cluster_for(setup.window(trace, seed, cell.hours)[1], cell.hours)[0]
        shrunk = False
        for j, (c, w, b) in enumerate(zip(cell.capacity, offered, busy, strict=True)):
            assert c <= first[j]  # calibration only shrinks
            shrunk |= c < first[j]
            if cell.time_scale == 1.0:
                stable = max(1, math.ceil(w / (setup.LOAD_MAX * cell.window_s)))
                assert c >= stable, (trace, seed, j)  # never past an offered load of LOAD_MAX
                # at the fixed point a type is busy enough, at its floor, or too small for the next step to shrink it
                assert b >= setup.BUSY_MIN or c == stable or max(stable, math.ceil(c * b / setup.BUSY_TARGET)) == c, (trace, seed, j, b)
        assert shrunk or min(busy) >= setup.BUSY_MIN or trace == "lcg"


def test_parallel_workers_give_the_same_result_as_one(shared_traces: Path) -> None:
    params = {"traces": ["kth"], "seeds": 2, "quick": True, "policies": ["Themis (exact sizes)"]}
    one = experiments.run("published_schedulers", {**params, "workers": 1})
    two = experiments.run("published_schedulers", {**params, "workers": 2})
    assert two["workers"] == 2 and one["workers"] == 1
    strip = {"wall_s", "workers", "params"}
    assert {k: v for k, v in one.items() if k not in strip} == {k: v for k, v in two.items() if k not in strip}
    assert make_cell("kth", 0, True).jobs == make_cell("kth", 0, True).jobs  # windows are drawn deterministically
    metrics = next(t for t in one["tables"] if t["title"].startswith("KTH-SP2: metrics"))
    assert metrics["columns"][1:3] == ["inside a queue", "reads before a job runs"]
    assert metrics["rows"][1][1:3] == ["jobs ranked across queues", "exact job sizes"]  # Themis reads the oracle
    assert not math.isnan(float(metrics["rows"][0][3].split()[0].replace(",", "")))  # numbers are formatted for people
    assert one["tables"][0]["rows"][0][1] == one["paragraphs"]["KTH-SP2"]
    assert {k for k, _, _ in METRICS} >= {"mean_response_s", "rho_max", "sharing_loss", "welfare_share"}


def test_the_sweep_parts_combine_to_the_whole_study(shared_traces: Path) -> None:
    # what the lab's Celery workers would run: one part per (trace, window), then combine
    params = {"traces": ["kth"], "seeds": 2, "quick": True, "policies": ["Tiresias"]}
    whole = experiments.run("published_schedulers", params)
    parts = experiments.run_in_parts("published_schedulers", params)
    strip = {"wall_s", "workers", "params"}
    assert {k: v for k, v in parts.items() if k not in strip} == {k: v for k, v in whole.items() if k not in strip}
    experiment = experiments.get("published_schedulers")
    assert experiment.shards is not None
    assert [p["cell"] for p in experiment.shards(experiment.params(params))] == [["kth", 0], ["kth", 1]]


def test_the_calibrations_reference_run_is_the_h_ltrf_run_it_replaces(shared_traces: Path) -> None:
    cell, reference = setup.calibrated_cell("fb2009", 1, True)
    assert reference is not None and cell.capacity == make_cell("fb2009", 1, True).capacity
    assert setup.run_config(cell, setup.REFERENCE, reference) == setup.run_config(cell, setup.REFERENCE)


def test_the_page_is_rebuilt_from_the_saved_result(quick: dict[str, Any], tmp_path: Path) -> None:
    # docs/published_schedulers.md comes from a saved result: its "Every run" table rebuilds the same paragraphs
    import json

    from simulator.experiments.published import document

    saved = tmp_path / "published.json"
    saved.write_text(json.dumps(quick), encoding="utf-8")
    page = tmp_path / "page.md"
    assert document.main([str(saved), str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    for paragraph in quick["paragraphs"].values():
        assert f"- {paragraph}" in text
    assert text.count("### ") == 6 and "| configuration | inside a queue | reads before a job runs |" in text
    assert document.main([str(saved)]) == 2


@pytest.mark.parametrize(("x", "text"), [(-60.04, "-60.0"), (4.5, "+4.5"), (0.04, "+0.04"), (-0.012, "-0.012"), (0.0, "+0.0")])
def test_a_small_significant_change_is_not_printed_as_zero(x: float, text: str) -> None:
    # a change that rounds to 0.0 at one decimal keeps two significant digits: never "slower (+0.0 %)"
    assert report._pct(x) == text
    assert float(report._pct(x)) == pytest.approx(x, rel=0.1, abs=1e-12)
