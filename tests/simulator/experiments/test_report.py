"""The fidelity report (docs/fidelity.md): the command line, the Markdown and the registered experiment."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator import experiments
from simulator.experiments import report
from simulator.experiments.__main__ import main
from simulator.experiments.fidelity import Estimate, mean_ci, off_by, paired, scaled_verdict, verdict


def test_help_and_list_print_usage_and_names_without_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "report [--quick]" in capsys.readouterr().out
    assert main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert "fidelity_report:" in listed and "era_headline:" in listed
    assert main(["no_such_experiment"]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert main(["report", "--bogus"]) == 2


def test_the_report_has_one_row_per_headline_and_counts_the_verdicts(tmp_path: Path) -> None:
    sections = report.run_all(quick=True, progress=lambda f, m: None, names=["era_headline", "no_such"])
    assert [s.name for s in sections] == ["era_headline"]
    text = report.markdown(sections, quick=True)
    heads = sections[0].headlines
    assert len(heads) >= 4
    table_rows = [line for line in text.splitlines() if line.startswith("| 001 era_headline")]
    assert len(table_rows) == len(heads)
    assert sum(report.counts(sections)["001"].values()) == len(heads)


def test_a_failing_experiment_is_listed_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(name: str, params: object = None, progress: object = None) -> dict[str, object]:
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(experiments, "run", boom)
    sections = report.run_all(quick=True, progress=lambda f, m: None, names=["era_headline"])
    assert sections[0].error == "RuntimeError: solver exploded"
    assert "Did not run: RuntimeError: solver exploded." in report.markdown(sections, quick=True)


def test_intervals_and_the_verdict_rule() -> None:
    est = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert est.mean == 3.0 and est.low < 3.0 < est.high and est.n == 5
    assert mean_ci([2.0]) == Estimate(2.0, 2.0, 2.0, 1)
    diff = paired([2.0, 3.0, 4.0, 5.0, 6.0], [1.0, 2.1, 2.9, 4.0, 5.0])
    assert diff.low > 0  # the same offset on every seed: a tight interval
    assert verdict(3.2, est, True) == "reproduced"
    assert verdict(8.0, est, True) == "shape only" and verdict(8.0, est, False) == "differs"
    assert verdict(None, None, True) == "reproduced"
    with pytest.raises(ValueError):
        paired([1.0], [1.0, 2.0])


def test_the_magnitude_rule() -> None:
    assert off_by(10.0, 23.0, 15.0) == 1.0 and off_by(10.0, 23.0, 46.0) == 2.0 and off_by(10.0, 23.0, 2.5) == 4.0
    assert off_by(680.0, 680.0, 20.0) == 34.0 and off_by(-10.0, -10.0, -40.0) == 4.0
    assert off_by(7.0, 7.0, -20.0) == float("inf") and off_by(7.0, 7.0, 0.0) == float("inf")  # the other sign
    # LTRF Fig. 8: the paper's 10-23 %, ours 418 %: 18x
    assert scaled_verdict("shape only", 10.0, 23.0, 418.0) == "differs (magnitude)"
    assert scaled_verdict("shape only", 10.0, 23.0, 60.0) == "shape only"  # 2.6x: within 3x
    assert scaled_verdict("differs", 10.0, 23.0, 418.0) == "differs" and scaled_verdict("reproduced", 1.0, 1.0, 9.0) == "reproduced"
    est = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])  # mean 3, interval about [1.0, 5.0]
    assert verdict(20.0, est, True) == "differs (magnitude)" and verdict(8.0, est, True) == "shape only"


def test_every_paper_experiment_of_the_report_is_registered_and_has_a_ci_size() -> None:
    registry = experiments.load_all()
    missing = [name for _, name in report.PAPER_EXPERIMENTS if name not in registry]
    assert missing == []
    for name, overrides in report.QUICK.items():
        registry[name].params(overrides)  # every CI size is a valid overlay of the defaults


def test_the_registered_report_shows_the_same_rows_in_the_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "PAPER_EXPERIMENTS", (("001", "era_rayon"),))
    result = experiments.run("fidelity_report", {"size": "quick"})
    summary, verdicts, runs = result["tables"]
    assert sum(sum(row[1:]) for row in verdicts["rows"]) == 2
    assert len(summary["rows"]) == 2 and {row[4] for row in summary["rows"]} <= set(report.VERDICTS)
    assert runs["rows"][0][:3] == ["era_rayon", "001", "ran"]
    with pytest.raises(ValueError, match="size"):
        experiments.run("fidelity_report", {"size": "huge"})
