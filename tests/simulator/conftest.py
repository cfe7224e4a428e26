"""Shared fixtures of the simulator tests: trace locations and small trees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SWIM_TSV = REPO / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"
# The large SWF traces are not committed; CI checks /work/shared out beside the clone.
SHARED_TRACES = (REPO / ".." / "shared" / "traces").resolve()


@pytest.fixture(scope="session")
def swim_path() -> Path:
    return SWIM_TSV


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """``<repo>/../shared/traces``; skipped only off CI when it is absent."""
    if not SHARED_TRACES.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the shared traces are missing: {SHARED_TRACES}")
        pytest.skip(f"shared traces not checked out beside the repository ({SHARED_TRACES})")
    return SHARED_TRACES
