"""The one module that talks to Slurm: its command-line tools (``sbatch``, ``scancel``, ``squeue --json``,
``sinfo --json``, ``scontrol``, ``sdiag``), as ColdFront's Slurm plugin keeps ``sacctmgr`` behind one
module. Everything else in the market uses :class:`SlurmClient`; tests use :class:`FakeSlurmClient`.

Written against Slurm 22.05 (Debian 12):

- With the controller down, ``squeue --json`` and ``sinfo --json`` exit 0 after about 9 s with an
  "Unspecified error" in ``errors``, so reads ping first (``scontrol ping``, instant either way).
- ``squeue --json`` lists every job (it ignores ``-j`` and ``-t``), finished ones for ``MinJobAge``
  seconds: ``job_id``, ``array_job_id``, ``array_task_id``, ``job_state``, ``state_reason``,
  ``comment``, ``name``, ``partition``, ``start_time``/``end_time`` (epoch s), ``cpus``, ``exit_code``
  (the raw wait status: 768 is exit 3). A pending array is one record (``array_task_id`` null,
  ``array_task_string`` "3-399"), expanded here into its elements.
- ``sinfo --json`` lists nodes only: ``state``, ``state_flags`` (``DRAIN``), ``cpus``, ``alloc_cpus``,
  ``partitions``. ``scontrol`` has no ``--json`` in 22.05, so partitions and reservations are read
  from ``scontrol show ... -o`` (one ``key=value`` line each).
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol

TIMEOUT_S = 10.0
UNREACHABLE = ("Unable to contact slurm controller", "Socket timed out", "Connection refused", "Zero Bytes were transmitted",
               "slurm_load_", "Unable to establish")


class SlurmUnavailable(RuntimeError):
    """The controller did not answer (down, unreachable, or the tools are missing)."""


class SlurmError(RuntimeError):
    """Slurm refused a request; the message is Slurm's."""


@dataclass(frozen=True)
class SlurmJob:
    """One job as ``squeue --json`` shows it (an array element is a job of its own). Times are UTC."""

    job_id: int
    array_job_id: int | None
    array_task_id: int | None
    name: str
    comment: str
    partition: str
    state: str
    reason: str
    exit_code: int
    cpus: int
    start_time: datetime | None
    end_time: datetime | None
    reservation: str = ""


@dataclass(frozen=True)
class Partition:
    """A partition: ``usable_cpus`` = cores it may use on nodes neither drained nor down, capped by
    ``MaxCPUsPerNode`` per node (the market's capacity of the resource type it serves)."""

    name: str
    state: str
    max_cpus_per_node: int | None
    total_cpus: int
    usable_cpus: int
    nodes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "nodes": list(self.nodes)}


@dataclass(frozen=True)
class Node:
    """A node as ``sinfo --json`` shows it."""

    name: str
    state: str
    cpus: int
    alloc_cpus: int
    partitions: tuple[str, ...]
    flags: tuple[str, ...] = ()
    reason: str = ""

    @property
    def usable(self) -> bool:
        """Neither drained, draining, down nor failing: new work may start here."""
        bad = {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "NOT_RESPONDING", "FUTURE", "POWERED_DOWN"}
        return self.state.upper().split("+")[0] not in bad and not bad & {f.upper() for f in self.flags}

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "partitions": list(self.partitions), "flags": list(self.flags), "usable": self.usable}


@dataclass(frozen=True)
class ReservationInfo:
    name: str
    partition: str
    cores: int
    start: datetime
    end: datetime
    state: str


@dataclass(frozen=True)
class Diag:
    """``sdiag``'s job counters since the controller started (or ``sdiag --reset``)."""

    submitted: int
    started: int
    completed: int
    canceled: int
    failed: int


class SlurmClient(Protocol):
    """What the market asks of Slurm. Every method raises :class:`SlurmUnavailable` when the
    controller does not answer and :class:`SlurmError` when it refuses."""

    def ping(self) -> None:
        """Return when the controller answers; raise :class:`SlurmUnavailable` otherwise."""
        ...

    def version(self) -> str: ...

    def jobs(self) -> list[SlurmJob]: ...

    def nodes(self) -> list[Node]: ...

    def partitions(self) -> list[Partition]: ...

    def submit_array(self, *, name: str, comment: str, partition: str, count: int, command: str, time_limit_s: int,
                     reservation: str | None = None) -> int:
        """Submit ``count`` one-core tasks as one array running ``command``; the array's job id."""
        ...

    def cancel(self, job_ids: Sequence[int]) -> None: ...

    def create_reservation(self, *, name: str, partition: str, cores: int, start: datetime, duration_s: int) -> None: ...

    def delete_reservation(self, name: str) -> None: ...

    def reservations(self) -> list[ReservationInfo]: ...

    def diag(self) -> Diag: ...


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except FileNotFoundError as exc:
        raise SlurmUnavailable(f"{args[0]} is not installed: {exc}") from None
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(f"{args[0]} did not answer within {TIMEOUT_S:g} s") from None


def _epoch(value: Any) -> datetime | None:
    try:
        t = int(value)
    except (TypeError, ValueError):
        return None
    return datetime.fromtimestamp(t, tz=UTC) if t > 0 else None


def _kv(line: str) -> dict[str, str]:
    """``key=value`` pairs of one ``scontrol show ... -o`` line (values have no spaces there)."""
    out: dict[str, str] = {}
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep:
            out[key] = value
    return out


def _duration(seconds: int) -> str:
    """Slurm's ``[days-]hours:minutes:seconds``."""
    days, rest = divmod(max(int(seconds), 1), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{days}-{h:02d}:{m:02d}:{s:02d}" if days else f"{h:02d}:{m:02d}:{s:02d}"


@dataclass
class CliSlurmClient:
    """:class:`SlurmClient` over Slurm's command-line tools. ``run`` executes a command (tests inject one)."""

    run: Runner = _run
    _version: str = field(default="", init=False)

    def _call(self, *args: str) -> str:
        done = self.run(args)
        if done.returncode != 0:
            text = (done.stderr or done.stdout or "").strip()
            if any(marker in text for marker in UNREACHABLE):
                raise SlurmUnavailable(text[:300])
            raise SlurmError(f"{shlex.join(args)}: {text[:300]}")
        return done.stdout

    def version(self) -> str:
        if not self._version:
            self._version = self._call("sinfo", "--version").strip()
        return self._version

    def ping(self) -> None:
        """Raise :class:`SlurmUnavailable` unless slurmctld answers (``scontrol ping``: about 10 ms up or
        down, where every other command takes about 9 s to give up on a controller that is down)."""
        try:
            out = self._call("scontrol", "ping")
        except SlurmError as exc:
            raise SlurmUnavailable(str(exc)) from None
        if " is UP" not in out:
            raise SlurmUnavailable(out.strip()[:300] or "slurmctld does not answer")

    def _json(self, *args: str) -> dict[str, Any]:
        """A ``--json`` command's document. 22.05 exits 0 with ``{"errors": [...]}`` when the controller
        is down, so an error there is an outage when ``scontrol ping`` says so, a refusal otherwise."""
        doc = json.loads(self._call(*args))
        if doc.get("errors"):
            self.ping()
            raise SlurmError(f"{shlex.join(args)}: {doc['errors']}"[:300])
        return dict(doc)

    def jobs(self) -> list[SlurmJob]:
        """Every job Slurm lists (finished ones for ``MinJobAge``), one per array element. Read with
        ``squeue --Format`` (fields split by a unit separator), not ``--json``: with some 6,000 jobs
        listed the JSON took 0.83 s a poll and this 0.06 s (the poll is on every clock tick)."""
        self.ping()
        out = self._call("squeue", "-h", "-a", "-t", "all", "-O", ",".join(f"{f}:{SEP}" for f in SQUEUE_FIELDS))
        return [job for line in out.splitlines() if line.strip() for job in _squeue_line(line)]

    def nodes(self) -> list[Node]:
        data = self._json("sinfo", "--json")
        return [Node(name=str(n["name"]), state=str(n.get("state", "")), cpus=int(n.get("cpus", 0)),
                     alloc_cpus=int(n.get("alloc_cpus", 0)), partitions=tuple(n.get("partitions") or ()),
                     flags=tuple(n.get("state_flags") or ()), reason=str(n.get("reason") or ""))
                for n in data.get("nodes", [])]

    def partitions(self) -> list[Partition]:
        nodes = {n.name: n for n in self.nodes()}
        out = []
        for line in self._call("scontrol", "show", "partition", "-o").splitlines():
            kv = _kv(line)
            if "PartitionName" not in kv:
                continue
            names = tuple(_hostnames(kv.get("Nodes", ""), nodes))
            cap = kv.get("MaxCPUsPerNode", "UNLIMITED")
            per_node = None if cap in ("UNLIMITED", "") else int(cap)
            usable = sum(min(nodes[n].cpus, per_node if per_node is not None else nodes[n].cpus)
                         for n in names if n in nodes and nodes[n].usable) if kv.get("State") == "UP" else 0
            out.append(Partition(name=kv["PartitionName"], state=kv.get("State", ""), max_cpus_per_node=per_node,
                                 total_cpus=int(kv.get("TotalCPUs", 0)), usable_cpus=usable, nodes=names))
        return out

    def submit_array(self, *, name: str, comment: str, partition: str, count: int, command: str, time_limit_s: int,
                     reservation: str | None = None) -> int:
        if count < 1:
            raise ValueError("an array needs at least one task")
        args = ["sbatch", "--parsable", f"--partition={partition}", f"--array=0-{count - 1}", f"--job-name={name}",
                f"--comment={comment}", "--ntasks=1", "--cpus-per-task=1", f"--time={max(1, math.ceil(time_limit_s / 60))}",
                "--output=/dev/null", "--error=/dev/null", "--no-requeue"]
        if reservation:
            args.append(f"--reservation={reservation}")
        out = self._call(*args, f"--wrap={command}")
        return int(out.strip().split(";")[0])

    def cancel(self, job_ids: Sequence[int]) -> None:
        if job_ids:
            self._call("scancel", *(str(int(i)) for i in job_ids))

    def create_reservation(self, *, name: str, partition: str, cores: int, start: datetime, duration_s: int) -> None:
        nodes = next((p.nodes for p in self.partitions() if p.name == partition), ())
        self._call("scontrol", "create", "reservation", f"ReservationName={name}", f"PartitionName={partition}",
                   f"CoreCnt={int(cores)}", *( [f"Nodes={','.join(nodes)}"] if nodes else []),
                   f"StartTime={start.astimezone().strftime('%Y-%m-%dT%H:%M:%S')}", f"Duration={_duration(duration_s)}",
                   "Users=root", "Flags=IGNORE_JOBS")

    def delete_reservation(self, name: str) -> None:
        try:
            self._call("scontrol", "delete", f"ReservationName={name}")
        except SlurmError as exc:
            if not any(m in str(exc) for m in ("does not exist", "Invalid reservation", "Requested reservation is invalid")):
                raise

    def reservations(self) -> list[ReservationInfo]:
        out = []
        for line in self._call("scontrol", "show", "reservation", "-o").splitlines():
            kv = _kv(line)
            if "ReservationName" in kv:
                out.append(ReservationInfo(
                    name=kv["ReservationName"], partition=kv.get("PartitionName", ""), cores=int(kv.get("CoreCnt", 0) or 0),
                    start=datetime.fromisoformat(kv["StartTime"]).astimezone(UTC),
                    end=datetime.fromisoformat(kv["EndTime"]).astimezone(UTC), state=kv.get("State", "")))
        return out

    def diag(self) -> Diag:
        counts: dict[str, int] = {}
        for line in self._call("sdiag").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip().startswith("Jobs ") and value.strip().isdigit():
                counts[key.strip()[5:]] = int(value)
        return Diag(submitted=counts.get("submitted", 0), started=counts.get("started", 0), completed=counts.get("completed", 0),
                    canceled=counts.get("canceled", 0), failed=counts.get("failed", 0))


SEP = "\x1f"  # the unit separator: no job name or comment holds one
SQUEUE_FIELDS = ("JobID", "ArrayJobID", "ArrayTaskID", "State", "Reason", "StartTime", "EndTime", "NumCPUs", "Reservation",
                 "exit_code", "Partition", "Name", "Comment")


@lru_cache(maxsize=4096)  # a poll's jobs share their start and end seconds by the hundred
def _when(text: str) -> datetime | None:
    """``2026-11-28T16:00:48`` (the controller's local time) as UTC; None for N/A, Unknown, None."""
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        return None


@lru_cache(maxsize=32_768)
def _squeue_line(line: str) -> tuple[SlurmJob, ...]:
    """One ``squeue -O`` line, as :func:`_jobs` reads a JSON record (a pending array's range expanded).

    Cached by the line's text: a finished job's line is the same at every poll for ``MinJobAge``, and
    parsing thousands of them on every clock tick was most of a busy poll's time (4,442 lines: 88 ms).
    The jobs are frozen and the tuple immutable, so the cached answer is shared safely."""
    v = line.split(SEP)
    if len(v) < len(SQUEUE_FIELDS):
        return ()
    f = dict(zip(SQUEUE_FIELDS, (x.strip() for x in v), strict=False))
    array_job = int(f["ArrayJobID"]) if f["ArrayJobID"].isdigit() and f["ArrayTaskID"] != "N/A" else None
    task = f["ArrayTaskID"]
    base = SlurmJob(job_id=int(f["JobID"].split("_")[0]) if f["JobID"].split("_")[0].isdigit() else 0,
                    array_job_id=array_job, array_task_id=int(task) if task.isdigit() else None, name=f["Name"],
                    comment="" if f["Comment"] == "(null)" else f["Comment"], partition=f["Partition"], state=f["State"],
                    reason=f["Reason"], exit_code=int(f["exit_code"]) if f["exit_code"].lstrip("-").isdigit() else 0,
                    cpus=int(f["NumCPUs"]) if f["NumCPUs"].isdigit() else 0, start_time=_when(f["StartTime"]),
                    end_time=_when(f["EndTime"]), reservation="" if f["Reservation"] == "(null)" else f["Reservation"])
    if array_job and base.array_task_id is None and task not in ("", "N/A"):
        return tuple(replace(base, array_task_id=k) for k in expand_indices(task))
    return (base,)


def expand_indices(spec: str) -> list[int]:
    """Array indices of an ``array_task_string``: "0-3,7,9-11:2%5" -> [0, 1, 2, 3, 7, 9, 11]."""
    out: list[int] = []
    for part in spec.split("%", 1)[0].split(","):
        part = part.strip()
        if part:
            rng, _, step = part.partition(":")
            lo, _, hi = rng.partition("-")
            out += range(int(lo), int(hi or lo) + 1, int(step or 1))
    return out


def _jobs(j: dict[str, Any]) -> list[SlurmJob]:
    """One record per element: a pending array is one record whose ``array_task_id`` is null and whose
    ``array_task_string`` ("3-399") names its elements, which have no job ids of their own yet."""
    if j.get("array_job_id") and j.get("array_task_id") is None and j.get("array_task_string"):
        return [_job({**j, "array_task_id": k}) for k in expand_indices(str(j["array_task_string"]))]
    return [_job(j)]


def _job(j: dict[str, Any]) -> SlurmJob:
    array_task = j.get("array_task_id")
    array_job = j.get("array_job_id")
    state = j.get("job_state")
    if isinstance(state, list):  # later Slurm versions: a list of flags
        state = state[0] if state else "UNKNOWN"
    return SlurmJob(
        job_id=int(j["job_id"]), array_job_id=int(array_job) if array_job else None,
        array_task_id=int(array_task) if isinstance(array_task, int) and array_job else None,
        name=str(j.get("name") or ""), comment=str(j.get("comment") or ""), partition=str(j.get("partition") or ""),
        state=str(state or ""), reason=str(j.get("state_reason") or ""),
        exit_code=int(j.get("exit_code") or 0), cpus=int(j.get("cpus") or 0),
        start_time=_epoch(j.get("start_time")), end_time=_epoch(j.get("end_time")), reservation=str(j.get("resv_name") or ""),
    )


def _hostnames(expr: str, known: dict[str, Node]) -> list[str]:
    """The node names of a hostlist expression; the names ``sinfo`` knows when it is a range (``vm[1-4]``)."""
    if not expr or expr == "(null)":
        return []
    if "[" not in expr:
        return expr.split(",")
    prefix = expr.split("[", 1)[0]
    return [n for n in known if n.startswith(prefix)]
