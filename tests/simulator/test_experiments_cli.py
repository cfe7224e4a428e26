"""``python -m simulator.experiments`` prints usage for --help and lists experiments for --list."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from simulator.experiments import load_all

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "simulator.experiments", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_help_prints_usage():
    out = _cli("--help")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "usage:" in out.stdout and "--list" in out.stdout and "key=value" in out.stdout


def test_list_names_every_experiment():
    out = _cli("--list")
    assert out.returncode == 0, out.stderr
    names = [line.split(":", 1)[0] for line in out.stdout.splitlines() if line.strip()]
    # the registry as a fresh process loads it (this process may hold experiments other tests registered)
    assert names == sorted(names) and set(names) <= set(load_all())
    assert {"era_headline", "abacus_fig9c", "cura_table7", "paper003_der", "simulation"} <= set(names)


def test_an_unknown_experiment_is_a_usage_error_not_a_traceback():
    out = _cli("no_such_experiment")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "no_such_experiment" in out.stderr
