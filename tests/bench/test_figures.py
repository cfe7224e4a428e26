"""The benchmarks' shared rules (bench/figures.py, bench/suite.py): a figure's ratio says whether its
goal is met whichever way the goal points, and a benchmark that measured a no-op stops with its own
exit status and a message, here bench_clearing.py placing its bids the hollow way (README, "Tests and benchmarks") (each
cleared at its commit, so the timed clearing had nothing left to do)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import figures, suite

ROOT = Path(__file__).resolve().parents[2]


def test_the_ratio_is_at_least_one_exactly_when_the_goal_is_met() -> None:
    assert figures.Figure("speed", 7000.0, "x", goal=6000.0, better="higher").ratio == pytest.approx(7 / 6)
    assert figures.Figure("speed", 3000.0, "x", goal=6000.0, better="higher").ratio == pytest.approx(0.5)
    assert figures.Figure("p50", 10.0, "ms", goal=15.0, better="lower").ratio == pytest.approx(1.5)
    assert figures.Figure("p50", 30.0, "ms", goal=15.0, better="lower").ratio == pytest.approx(0.5)
    assert figures.Figure("no goal", 1.0, "ms").ratio is None


def test_record_appends_a_json_line_and_the_table_shows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "figures.jsonl"
    monkeypatch.setenv("BENCH_FIGURES", str(path))
    figures.record("market_clear p50, 1,000 active jobs", 12.5, unit="ms", goal=15.0, better="lower", extra={"cpu_ms": 9.0},
                   additions_s=0.3)
    [line] = path.read_text().splitlines()
    assert json.loads(line)["extra"] == {"cpu_ms": 9.0}
    [fig] = figures.load_figures(str(path))
    text = suite.table([fig], [("tick-pg", "HOLLOW MEASUREMENT (bench_tick.py): ...", 1.0)])
    assert "market_clear p50, 1,000 active jobs" in text and "<= 15 ms" in text and "1.20" in text
    assert "0.60" in text  # scaled: on a machine twice as fast the goal is 7.5 ms
    assert "tick-pg: HOLLOW MEASUREMENT" in text and "goals met: 1 of 1; scaled to this machine: 0 of 1" in text


def test_the_scaled_ratio_holds_a_faster_machine_to_a_tighter_goal() -> None:
    # a ceiling: 12 ms against 15 ms is met at the reference speed, not on a machine twice as fast (goal 7.5 ms)
    assert figures.Figure("p50", 12.0, "ms", goal=15.0, better="lower", additions_s=0.6).scaled_ratio == pytest.approx(1.25)
    assert figures.Figure("p50", 12.0, "ms", goal=15.0, better="lower", additions_s=0.3).scaled_ratio == pytest.approx(0.625)
    # a floor: 4,000x against 6,000x is met on a machine half as fast (goal 3,000x there), not on one 1.5x as fast
    assert figures.Figure("speed", 4000.0, "x", goal=6000.0, additions_s=1.2).scaled_ratio == pytest.approx(4 / 3)
    assert figures.Figure("speed", 4000.0, "x", goal=6000.0, additions_s=0.4).scaled_ratio == pytest.approx(4 / 9)
    assert figures.Figure("speed", 4000.0, "x", goal=6000.0).scaled_ratio is None  # no additions time
    assert figures.Figure("no goal", 1.0, "ms", additions_s=0.6).scaled_ratio is None


def test_record_measures_the_machine_s_speed_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(figures, "_ADDITIONS", [])
    monkeypatch.setattr(figures, "python_additions_s", lambda: calls.append(1) or 0.45)
    monkeypatch.delenv("BENCH_FIGURES", raising=False)
    first = figures.record("a", 1.0, unit="ms", goal=2.0, better="lower")
    second = figures.record("b", 1.0, unit="ms", goal=2.0, better="lower")
    assert (first.additions_s, second.additions_s, len(calls)) == (0.45, 0.45, 1)
    assert figures.record("c", 1.0, unit="ms").additions_s is None  # no goal to scale: nothing measured


def test_a_hollow_measurement_exits_with_its_own_status() -> None:
    def measures_nothing() -> int:
        figures.require(False, "a clearing that cleared")
        return 0

    assert figures.run_guarded(measures_nothing) == figures.HOLLOW_EXIT
    assert figures.run_guarded(lambda: 0) == 0


def _bench_clearing(*flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BENCH_FIGURES", "DATABASE_URL")} | {"PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "bench/bench_clearing.py", "--jobs", "10", "--repeat", "2", *flags], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_bench_clearing_refuses_to_time_a_clearing_that_found_nothing_to_clear() -> None:
    """With eager Celery each bid cleared the market at its commit and the timed
    market_clear returned "current" (0 rounds) every time; the benchmark now says so and fails."""
    hollow = _bench_clearing("--hollow")
    assert hollow.returncode == figures.HOLLOW_EXIT, hollow.stderr
    assert "returned 'current' with 0 rounds" in hollow.stderr and "figure:" not in hollow.stdout
    honest = _bench_clearing()
    assert honest.returncode == 0, honest.stderr
    assert "figure: market_clear p50, 10 active jobs, SQLite" in honest.stdout
