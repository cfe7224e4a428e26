"""Workload traces: the SWIM Facebook 2009 TSV and the Standard Workload Format.

Both loaders return :class:`TraceJob` records sorted by submit time, with
times shifted so the first selected job arrives at (about) zero. The
workloads (docs/mechanisms.md, "Workloads") need a documented, configurable rule turning the
SWIM byte counts into tasks and for deterministic (seeded) user assignment
when a trace carries no user column; :class:`SwimRule` is that rule.
"""

from __future__ import annotations

import gzip
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

MIB = 2**20


@dataclass(frozen=True)
class TraceJob:
    """One job of a workload trace.

    Attributes:
        job_id: the trace's job number.
        submit_time: seconds since the start of the selected window.
        user: user name ("u<id>").
        group: group name ("g<id>").
        tasks: number of tasks per resource type, e.g. ``(map, reduce)`` for
            SWIM, ``(processors,)`` for SWF.
        task_duration: seconds per task, per resource type (same length as
            ``tasks``).
    """

    job_id: int
    submit_time: float
    user: str
    group: str
    tasks: tuple[int, ...]
    task_duration: tuple[float, ...]


def _bucket(n: int, edges: tuple[int, ...], word: str) -> str:
    """``n`` as a size bucket: ``"1 map"``, ``"2-10 maps"``, ..., ``"over 100 maps"``."""
    if n == 1:
        return f"1 {word}"
    lo = 2
    for hi in edges:
        if n <= hi:
            return f"{lo}-{hi} {word}s" if lo < hi else f"{hi} {word}s"
        lo = hi + 1
    return f"over {edges[-1]} {word}s"


def job_class(job: TraceJob) -> str:
    """A trace job's class: its shape and size (paper 000, Sec. 5 learns one utility per class
    of repeated jobs; a trace names no job, so jobs alike in shape are taken as repeats).

    SWIM (map, reduce): map-only or map+reduce, and the map count in buckets 1, 2-10,
    11-100, over 100. SWF (processors): the processor count in powers of two (1, 2, 3-4,
    ..., 513-1024, over 1024). E.g. ``"trace: map-only, 2-10 maps"``, ``"trace: 17-32 processors"``.
    The buckets are our choice (a handful of classes with many jobs each), made before looking
    at any fit.
    """
    if len(job.tasks) == 2:
        shape = "map+reduce" if job.tasks[1] > 0 else "map-only"
        return f"trace: {shape}, {_bucket(int(job.tasks[0]), (10, 100), 'map')}"
    procs = int(job.tasks[0])
    if procs == 1:
        return "trace: 1 processor"
    edges = tuple(2**k for k in range(1, 11))
    for lo, hi in zip((2, *(e + 1 for e in edges)), edges, strict=False):
        if procs <= hi:
            return f"trace: {lo}-{hi} processors" if lo < hi else f"trace: {hi} processors"
    return "trace: over 1024 processors"


@dataclass(frozen=True)
class SwimRule:
    """How SWIM byte counts become map and reduce tasks (docs/mechanisms.md, "Workloads").

    Map side: the maps read the input and, for a map-only job (no shuffle
    bytes), also write the job's output, so ``map_bytes = input + (output if
    shuffle == 0 else 0)``. There is one map task per ``block_bytes`` of
    ``map_bytes`` (Hadoop's one-split-per-HDFS-block), at least one, at most
    ``max_map_tasks``.

    Reduce side: ``ceil(shuffle / reduce_bytes_per_task)`` reduce tasks, at
    most ``max_reduce_tasks``; a job without shuffle bytes has no reduce
    task (3/4 of the FB-2009 jobs are map-only: their output is written by
    the maps), a job with any shuffle has at least one.

    Durations: ``bytes per task / throughput + overhead_s``, at least
    ``min_task_s``; a map task handles ``map_bytes / maps`` at
    ``map_bytes_per_s``, a reduce task ``(shuffle + output) / reduces`` at
    ``reduce_bytes_per_s``. The caps therefore change the number of tasks of
    the largest jobs, not their total work (only the per-task overhead).

    The defaults (10 MB/s per slot, 2 s overhead) turn FB-2009 into 300,759
    map and 13,968 reduce tasks, 3.85e6 map and 2.37e6 reduce task-seconds:
    on a 100-map + 50-reduce slot cluster that is 45 % (map) and 55 %
    (reduce) of the 24 h on average, with a few hours above capacity (map:
    hours 4 and 15; reduce: hours 7, 9 and 15) whose backlog drains in the
    quieter hours after them: busy, not hopeless.
    """

    block_bytes: int = 64 * MIB
    reduce_bytes_per_task: int = 1024 * MIB
    max_map_tasks: int = 2000
    max_reduce_tasks: int = 500
    map_bytes_per_s: float = 10e6
    reduce_bytes_per_s: float = 10e6
    overhead_s: float = 2.0
    min_task_s: float = 1.0

    def __post_init__(self) -> None:
        if self.block_bytes <= 0 or self.reduce_bytes_per_task <= 0:
            raise ValueError("block sizes must be positive")
        if self.max_map_tasks < 1 or self.max_reduce_tasks < 1:
            raise ValueError("task caps must be at least 1")
        if self.map_bytes_per_s <= 0 or self.reduce_bytes_per_s <= 0:
            raise ValueError("throughputs must be positive")
        if self.overhead_s < 0 or self.min_task_s < 0:
            raise ValueError("overhead and minimum duration must be >= 0")

    def tasks_for(self, input_b: float, shuffle_b: float, output_b: float) -> tuple[int, int]:
        """``(map tasks, reduce tasks)`` for one job's byte counts.

        Raises:
            ValueError: a byte count that is negative or not finite (no task count follows from it).
        """
        if not all(0.0 <= b < math.inf for b in (input_b, shuffle_b, output_b)):
            raise ValueError(f"byte counts must be finite and >= 0, got {input_b!r}, {shuffle_b!r}, {output_b!r}")
        map_b = input_b + (output_b if shuffle_b <= 0 else 0.0)
        maps = min(max(1, math.ceil(map_b / self.block_bytes)), self.max_map_tasks)
        if shuffle_b <= 0:
            return maps, 0
        reduces = math.ceil(shuffle_b / self.reduce_bytes_per_task)
        return maps, min(max(1, reduces), self.max_reduce_tasks)

    def durations_for(self, input_b: float, shuffle_b: float, output_b: float) -> tuple[float, float]:
        """``(map task s, reduce task s)``; the reduce entry is 0 without reduces."""
        maps, reduces = self.tasks_for(input_b, shuffle_b, output_b)
        map_b = input_b + (output_b if shuffle_b <= 0 else 0.0)
        map_s = max(self.min_task_s, map_b / maps / self.map_bytes_per_s + self.overhead_s)
        if reduces == 0:
            return map_s, 0.0
        per_reduce = (shuffle_b + output_b) / reduces
        red_s = max(self.min_task_s, per_reduce / self.reduce_bytes_per_s + self.overhead_s)
        return map_s, red_s


@dataclass(frozen=True)
class TraceLimits:
    """Limits on reading a trace that did not come with the repository (an upload): at most
    ``max_lines`` lines, ``max_bytes`` bytes once decompressed (every gzip member counts) and
    ``max_line_bytes`` bytes a line, read in at most ``max_seconds``; each is checked per chunk of
    :data:`READ_CHUNK` bytes, so a line of a gigabyte is refused after its first chunks."""

    max_lines: int
    max_seconds: float
    max_bytes: int = 64 * 2**20
    max_line_bytes: int = 64 * 1024


READ_CHUNK = 64 * 1024


class _Reader(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


MAX_SUBMIT_S = 1e10  # ~317 years of trace clock
MAX_BYTES = 1e18  # an exabyte per job and phase
MAX_SWF_VALUE = 1e12  # any SWF field (ids, seconds, counts; -1 = missing)
MAX_PROCESSORS = 10_000_000


def _open_text(path: Path, limits: TraceLimits | None = None) -> Iterator[str]:
    """Lines of a plain or gzip-compressed text file (every gzip member), within ``limits``.

    Without limits (the repository's own traces) the file is read as it is. With limits it is
    streamed in chunks of :data:`READ_CHUNK` decompressed bytes, and each chunk is checked
    against the decompressed total, the line length, the line count and the time, so a hostile
    file costs at most one chunk past a limit, never its whole size in memory.

    Raises:
        ValueError: past a limit, naming it.
    """
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    if limits is None:
        opener = gzip.open if gz else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            yield from fh
        return
    deadline = time.monotonic() + limits.max_seconds
    with (gzip.open(path, "rb") if gz else open(path, "rb")) as raw:
        yield from _limited_lines(raw, path.name, limits, deadline)


def _limited_lines(raw: _Reader, name: str, limits: TraceLimits, deadline: float) -> Iterator[str]:
    total, lineno, pending = 0, 0, b""
    while True:
        chunk = raw.read(READ_CHUNK)
        total += len(chunk)
        if total > limits.max_bytes:
            raise ValueError(f"{name}: more than {limits.max_bytes / 2**20:g} MB once decompressed; take a shorter trace")
        if time.monotonic() > deadline:
            raise ValueError(f"{name}: reading took longer than {limits.max_seconds:g} s (at line {lineno:,})")
        pieces = (pending + chunk).split(b"\n")
        pending = pieces.pop() if chunk else b""
        if len(pending) > limits.max_line_bytes:
            raise ValueError(f"{name}: line {lineno + 1:,} is longer than {limits.max_line_bytes:,} bytes")
        for piece in pieces if chunk else [*pieces, pending]:
            if not chunk and not piece:
                continue
            lineno += 1
            if lineno > limits.max_lines:
                raise ValueError(f"{name}: more than {limits.max_lines:,} lines; take a shorter trace")
            if len(piece) > limits.max_line_bytes:
                raise ValueError(f"{name}: line {lineno:,} is longer than {limits.max_line_bytes:,} bytes")
            yield piece.decode("utf-8", errors="replace") + "\n"
        if not chunk:
            return


def _number(text: str, where: str, what: str, lo: float, hi: float) -> float:
    """``float(text)`` if it is a finite number in ``[lo, hi]``, else ValueError naming the line."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: {what} is {text[:40]!r}, not a number") from None
    if not lo <= value <= hi:  # also refuses nan, inf and -inf
        raise ValueError(f"{where}: {what} is {text[:40]!r}, not a finite number from {lo:g} to {hi:g}")
    return value


def _window(origin: float, start_hour: float, hours: float | None) -> tuple[float, float]:
    """``[lo, hi)`` seconds on the trace's clock for a window, with validation."""
    if start_hour < 0 or (hours is not None and hours <= 0):
        raise ValueError("start_hour must be >= 0 and hours > 0")
    lo = origin + 3600.0 * start_hour
    hi = math.inf if hours is None else lo + 3600.0 * hours
    return lo, hi


SWIM_FIELDS = {1: ("submit time", MAX_SUBMIT_S), 3: ("input bytes", MAX_BYTES), 4: ("shuffle bytes", MAX_BYTES),
               5: ("output bytes", MAX_BYTES)}


def _swim_rows(path: Path, limits: TraceLimits | None = None) -> Iterator[tuple[int, float, float, float, float]]:
    """``(id, submit s, input B, shuffle B, output B)`` per SWIM line; ValueError (with the file's
    name and line number) on a malformed line or a value that is not finite and in range."""
    for lineno, line in enumerate(_open_text(path, limits), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path.name}:{lineno}"
        if len(fields) != 6:
            raise ValueError(f"{where}: expected 6 fields, got {len(fields)}")
        job_id = _number(fields[0].removeprefix("job"), where, "the job id", 0, 2**53)
        if job_id != int(job_id):
            raise ValueError(f"{where}: the job id {fields[0][:40]!r} is not a whole number")
        submit, inp, shuf, out = (_number(fields[k], where, SWIM_FIELDS[k][0], 0.0, SWIM_FIELDS[k][1]) for k in (1, 3, 4, 5))
        yield int(job_id), submit, inp, shuf, out


def load_swim(
    path: str | Path,
    *,
    rule: SwimRule = SwimRule(),
    start_hour: float = 0.0,
    hours: float | None = None,
    users: int | None = None,
    groups: int = 1,
    seed: int = 0,
    limits: TraceLimits | None = None,
) -> list[TraceJob]:
    """Load a SWIM workload (e.g. ``FB-2009_samples_24_times_1hr_0.tsv``).

    The file is tab-separated without header: ``job<id>``, submit time (s),
    gap to the previous submission (s, ignored: it is the difference of
    submit times), map input bytes, shuffle bytes, reduce output bytes.

    Args:
        path: the TSV (plain or gzip).
        rule: bytes-to-tasks rule; gives ``tasks = (maps, reduces)`` and
            ``task_duration = (map s, reduce s)``.
        start_hour, hours: keep jobs submitted in ``[start_hour h,
            (start_hour + hours) h)`` on the trace's clock (which starts at
            0 s; FB-2009 is 24 one-hour samples); ``hours=None`` keeps
            everything after the start.
        users: None gives every job user ``"u0"``; an int K gives each job a
            user ``"u<k>"``, k drawn uniformly from ``0..K-1`` by
            ``numpy.random.default_rng(seed)`` in trace order over the *whole*
            file, so a job keeps its user whatever window is selected.
        groups: user ``u<k>`` belongs to group ``"g<k mod groups>"``.
        seed: seed of the user assignment.
        limits: lines and seconds the reading may take (uploads); None: no limit.

    Returns:
        Jobs sorted by (submit time, id); times are shifted by the window's
        start, so each job keeps its offset inside the window (the first
        FB-2009 job arrives at 49 s, the first of hour 5 at a few seconds).

    Raises:
        ValueError: malformed line or a value that is not a finite number in range (with the
            file's name and line number), past ``limits``, bad window or ``users``/``groups`` < 1.
    """
    if (users is not None and users < 1) or groups < 1:
        raise ValueError("users and groups must be at least 1")
    rows = list(_swim_rows(Path(path), limits))
    owner = np.zeros(len(rows), dtype=np.int64)
    if users is not None:
        owner = np.random.default_rng(seed).integers(0, users, size=len(rows))
    lo, hi = _window(0.0, start_hour, hours)
    jobs = []
    for (job_id, submit, inp, shuf, out), k in zip(rows, owner.tolist(), strict=True):
        if not lo <= submit < hi:
            continue
        jobs.append(
            TraceJob(
                job_id=job_id,
                submit_time=submit - lo,
                user=f"u{k}",
                group=f"g{k % groups}",
                tasks=rule.tasks_for(inp, shuf, out),
                task_duration=rule.durations_for(inp, shuf, out),
            )
        )
    return sorted(jobs, key=lambda j: (j.submit_time, j.job_id))


# Standard Workload Format field numbers (1-based, as in the format's definition).
SWF_JOB, SWF_SUBMIT, SWF_RUN, SWF_ALLOC, SWF_REQ, SWF_USER, SWF_GROUP = 1, 2, 4, 5, 8, 12, 13


def _swf_rows(path: Path, limits: TraceLimits | None = None) -> Iterator[list[float]]:
    """The 18 numeric fields of each SWF job line (header ``;`` lines skipped); ValueError (with
    the file's name and line number) on a short line or a value that is not finite and in range."""
    for lineno, line in enumerate(_open_text(path, limits), start=1):
        text = line.strip()
        if not text or text.startswith(";"):
            continue
        fields = text.split()
        where = f"{path.name}:{lineno}"
        if len(fields) < 18:
            raise ValueError(f"{where}: expected 18 fields, got {len(fields)}")
        row = [_number(x, where, f"field {k}", -1.0, MAX_SWF_VALUE) for k, x in enumerate(fields[:18], start=1)]
        for k in (SWF_ALLOC, SWF_REQ):
            if row[k - 1] > MAX_PROCESSORS:
                raise ValueError(f"{where}: field {k} (processors) is {fields[k - 1][:40]!r}, more than {MAX_PROCESSORS:,}")
        yield row


def _swf_job(row: list[float]) -> tuple[int, float, int, float, str, str] | None:
    """``(id, submit, procs, runtime, user, group)`` or None for a skipped job."""
    procs = row[SWF_ALLOC - 1]
    if procs <= 0:
        procs = row[SWF_REQ - 1]
    runtime = row[SWF_RUN - 1]
    if procs <= 0 or runtime <= 0 or row[SWF_SUBMIT - 1] < 0:
        return None
    user, group = int(row[SWF_USER - 1]), int(row[SWF_GROUP - 1])
    return (
        int(row[SWF_JOB - 1]),
        row[SWF_SUBMIT - 1],
        int(procs),
        runtime,
        f"u{user}" if user >= 0 else "unknown",
        f"g{group}" if group >= 0 else "unknown",
    )


def load_swf(
    path: str | Path,
    *,
    start_hour: float = 0.0,
    hours: float | None = None,
    max_jobs: int | None = None,
    limits: TraceLimits | None = None,
) -> list[TraceJob]:
    """Load a Standard Workload Format trace (Parallel Workloads Archive).

    One resource type, processors: ``tasks = (procs,)`` with ``procs`` the
    allocated processors (field 5), or the requested ones (field 8) when the
    allocated count is missing; ``task_duration = (run time,)`` (field 4, s).
    The user is ``"u<field 12>"`` and the group ``"g<field 13>"``
    (``"unknown"`` where the field is -1).

    Skipped (documented in the format as "-1 = missing"): jobs whose run
    time is missing or zero (cancelled before start), whose processor count
    is missing or zero, or whose submit time is missing.

    Args:
        path: the ``.swf`` or ``.swf.gz`` file; lines starting with ``;`` are
            header comments.
        start_hour, hours: window ``[first + start_hour h, first +
            (start_hour + hours) h)`` where ``first`` is the first kept job's
            submit time (SWF clocks start at the log's UnixStartTime, often
            long before the first job), times shifted by the window start.
        max_jobs: keep at most this many jobs (the earliest).
        limits: lines and seconds the reading may take (uploads); None: no limit.

    Returns:
        Jobs sorted by (submit time, id), times shifted by the window start.

    Raises:
        ValueError: a line with fewer than 18 fields, a field that is not a finite number from
            -1 to 1e12 (processors: to 1e7), past ``limits`` (with the file's name and line
            number), or a bad window.
    """
    kept = [job for row in _swf_rows(Path(path), limits) if (job := _swf_job(row)) is not None]
    lo, hi = _window(min((j[1] for j in kept), default=0.0), start_hour, hours)
    jobs = [
        TraceJob(jid, submit - lo, user, group, (procs,), (runtime,))
        for jid, submit, procs, runtime, user, group in kept
        if lo <= submit < hi
    ]
    jobs.sort(key=lambda j: (j.submit_time, j.job_id))
    return jobs if max_jobs is None else jobs[:max_jobs]
