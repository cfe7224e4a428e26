"""Reading ``squeue --Format`` (``marketplace.slurm.client``): each line as the JSON reader would see the job, a
pending array's range expanded, and a line parsed once for as long as Slurm lists it unchanged."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from marketplace.slurm import client
from marketplace.slurm.client import SEP, SQUEUE_FIELDS, CliSlurmClient, SlurmJob


def line(**values: str) -> str:
    """An ``squeue -O`` line: each field of ``SQUEUE_FIELDS`` padded as squeue pads it, then the separator."""
    return "".join(f"{values.get(name, 'N/A'):<12}{SEP}" for name in SQUEUE_FIELDS)


RUNNING = line(JobID="101_7", ArrayJobID="101", ArrayTaskID="7", State="RUNNING", Reason="None",
               StartTime="2026-11-28T16:00:48", EndTime="2026-11-28T16:01:48", NumCPUs="1", Reservation="(null)",
               exit_code="0", Partition="map", Name="mkt1-a", Comment="mkt1-tok-5")
PENDING = line(JobID="102_[3-5]", ArrayJobID="102", ArrayTaskID="3-5", State="PENDING", Reason="Resources",
               StartTime="Unknown", EndTime="N/A", NumCPUs="1", Reservation="mkt1-r9", exit_code="0",
               Partition="reduce", Name="mkt1-b", Comment="mkt1-tok-6")
FAILED = line(JobID="99", ArrayJobID="99", ArrayTaskID="N/A", State="FAILED", Reason="NonZeroExitCode",
              StartTime="2026-11-28T15:00:00", EndTime="2026-11-28T15:00:02", NumCPUs="4", Reservation="(null)",
              exit_code="-2", Partition="map", Name="someone", Comment="(null)")


def local(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_a_line_reads_as_the_job_slurm_shows() -> None:
    (job,) = client._squeue_line(RUNNING)
    assert job == SlurmJob(job_id=101, array_job_id=101, array_task_id=7, name="mkt1-a", comment="mkt1-tok-5",
                           partition="map", state="RUNNING", reason="None", exit_code=0, cpus=1,
                           start_time=local("2026-11-28T16:00:48"), end_time=local("2026-11-28T16:01:48"), reservation="")
    (plain,) = client._squeue_line(FAILED)
    assert (plain.job_id, plain.array_job_id, plain.array_task_id, plain.comment, plain.exit_code, plain.cpus) == (
        99, None, None, "", -2, 4)


def test_a_pending_arrays_range_is_one_job_per_element_with_no_times() -> None:
    jobs = client._squeue_line(PENDING)
    assert [j.array_task_id for j in jobs] == [3, 4, 5]
    assert {(j.job_id, j.array_job_id, j.state, j.reservation, j.start_time, j.end_time) for j in jobs} == {
        (102, 102, "PENDING", "mkt1-r9", None, None)}


def test_a_short_line_is_no_job() -> None:
    assert client._squeue_line("garbage") == ()


def test_a_line_is_parsed_once_while_it_stays_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    client._squeue_line.cache_clear()
    first = client._squeue_line(PENDING)
    assert client._squeue_line(PENDING) is first  # the cached tuple: frozen jobs, shared safely
    assert client._squeue_line.cache_info().hits == 1
    changed = client._squeue_line(PENDING.replace("PENDING", "RUNNING "))
    assert changed is not first and {j.state for j in changed} == {"RUNNING"}

    listing = "\n".join([RUNNING, PENDING, "", FAILED]) + "\n"
    monkeypatch.setattr(CliSlurmClient, "ping", lambda self: None)
    monkeypatch.setattr(CliSlurmClient, "_call", lambda self, *args: listing)
    polls = [CliSlurmClient().jobs() for _ in range(2)]
    assert polls[0] == polls[1] and polls[0] is not polls[1]  # each poll its own list
    assert [(j.job_id, j.array_task_id) for j in polls[0]] == [(101, 7), (102, 3), (102, 4), (102, 5), (99, None)]
    polls[0].clear()  # a caller changing its list changes nothing cached
    assert len(CliSlurmClient().jobs()) == 5
