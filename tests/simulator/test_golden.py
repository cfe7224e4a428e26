"""Golden run: the first 30 minutes of FB-2009 through the market and the cluster.

The summary of a small seeded run is compared with the committed
``golden/swim_30min.json`` so that any change of behaviour (task rule,
dispatch, fair share, auction) shows up in review as a diff of that file.
After an intended change, regenerate it and commit the new file:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/simulator/test_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from scheduler.fairshare.fairness import QueueTree
from simulator.runner import MarketParams, run
from simulator.workloads.traces import SwimRule, load_swim

GOLDEN = Path(__file__).parent / "golden" / "swim_30min.json"


def golden_run(swim_path: Path) -> dict[str, Any]:
    jobs = load_swim(swim_path, rule=SwimRule(), hours=0.5, users=4, groups=2, seed=0)
    tree = QueueTree.from_paths({"root.g0.u0": 1, "root.g0.u2": 1, "root.g1.u1": 1, "root.g1.u3": 1})
    leaf = {name.rsplit(".", 1)[1]: k for k, name in enumerate(tree.leaf_names)}
    params = MarketParams(alpha=0.5, utility="log", fairshare="hltrf", t_wait=30.0, dispatch="stride", seed=0)
    result = run(jobs, tree=tree, leaf_of_user=leaf, capacity=[10, 5], params=params)
    return {"setup": "FB-2009 first 30 min, 4 users in 2 groups, 10 map + 5 reduce slots",
            "summary": result.summary()}  # fmt: skip


def test_swim_30min_matches_golden(swim_path: Path) -> None:
    got = golden_run(swim_path)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert got["summary"]["finished"] == got["summary"]["jobs"] == 34
    assert_same(got, want, "golden")


def assert_same(got: Any, want: Any, where: str) -> None:
    """Equal structure, counts and strings; floats (9 significant digits in
    the file) may differ in the last digits across numpy builds."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for key in want:
            assert_same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{where}[{k}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-9), where
    else:
        assert got == want and type(got) is type(want), where
