"""Non-finite and out-of-range trace values are refused with the file's line
number (they used to raise OverflowError in ``SwimRule.tasks_for``, ``estimate_bytes`` and
``int(procs)``, a 500 on the lab's page, and ``nan`` was accepted), and items 4's limits: at most
``max_lines`` lines and ``max_seconds`` of reading."""

from __future__ import annotations

import math

import pytest

from simulator.whatif.run import estimate_bytes
from simulator.workloads.traces import SwimRule, TraceJob, TraceLimits, load_swf, load_swim

SWIM_OK = "job0\t10\t0\t1000000\t0\t0\njob1\t20\t10\t2000000\t100\t0\n"
SWF_OK = "; a header\n1 0 -1 100 4 -1 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e308", "-5", "Infinity"])
@pytest.mark.parametrize("column", [1, 3, 4, 5])
def test_swim_refuses_a_value_that_is_not_a_finite_number_in_range(tmp_path, value, column):
    fields = ["job2", "30", "10", "1000", "0", "0"]
    fields[column] = value
    path = tmp_path / "t.tsv"
    path.write_text(SWIM_OK + "\t".join(fields) + "\n")
    with pytest.raises(ValueError, match=r"t\.tsv:3: ") as err:
        load_swim(path)
    assert str(tmp_path) not in str(err.value)  # the file's name, not the server's path


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "-1e308"])
@pytest.mark.parametrize("field", [2, 4, 5, 8])
def test_swf_refuses_a_value_that_is_not_a_finite_number_in_range(tmp_path, value, field):
    fields = ["2", "10", "-1", "100", "4", "-1", "-1", "4", "-1", "-1", "1", "1", "1", "-1", "-1", "-1", "-1", "-1"]
    fields[field - 1] = value
    path = tmp_path / "t.swf"
    path.write_text(SWF_OK + " ".join(fields) + "\n")
    with pytest.raises(ValueError, match=r"t\.swf:3: "):
        load_swf(path)


def test_a_job_id_that_is_not_a_number_is_refused_with_its_line(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text(SWIM_OK + "jobX\t30\t10\t1000\t0\t0\n")
    with pytest.raises(ValueError, match=r"t\.tsv:3: "):
        load_swim(path)


@pytest.mark.parametrize("bad", [math.inf, math.nan, -1.0])
def test_the_swim_rule_refuses_what_it_cannot_turn_into_tasks(bad):
    with pytest.raises(ValueError):
        SwimRule().tasks_for(bad, 0.0, 0.0)


def test_the_memory_estimate_of_huge_jobs_is_a_number_not_an_overflow():
    job = TraceJob(1, 0.0, "u0", "g0", (10**7,), (1e9,))
    assert estimate_bytes([job], [1], 60.0) > 0


def test_limits_stop_a_long_file_at_its_line_limit(tmp_path):
    path = tmp_path / "long.tsv"
    path.write_text("".join(f"job{k}\t{k}\t1\t1000\t0\t0\n" for k in range(50)))
    assert len(load_swim(path, limits=TraceLimits(max_lines=50, max_seconds=60))) == 50
    with pytest.raises(ValueError, match="more than 20 lines"):
        load_swim(path, limits=TraceLimits(max_lines=20, max_seconds=60))


def test_limits_stop_a_slow_read_at_its_time_limit(tmp_path):
    path = tmp_path / "slow.swf"
    path.write_text(SWF_OK * 3000)
    with pytest.raises(ValueError, match="took longer than"):
        load_swf(path, limits=TraceLimits(max_lines=10**6, max_seconds=0.0))
