"""An in-memory Slurm for tests (:class:`~marketplace.slurm.client.SlurmClient`): partitions with a
core cap, array jobs that start when cores are free and end when the test says so (or after their
wall duration on an injected clock), advance reservations, an outage switch, and lost jobs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from marketplace.slurm.client import Diag, Node, Partition, ReservationInfo, SlurmError, SlurmJob, SlurmUnavailable


@dataclass
class FakeSlurmClient:
    """``caps``: partition -> cores (``MaxCPUsPerNode`` of one node). ``now``: the wall clock (UTC)."""

    caps: dict[str, int] = field(default_factory=lambda: {"map": 40, "reduce": 24})
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    down: bool = False
    drained: set[str] = field(default_factory=set)
    _jobs: dict[int, SlurmJob] = field(default_factory=dict)
    _wall: dict[int, float] = field(default_factory=dict)
    _reservations: dict[str, ReservationInfo] = field(default_factory=dict)
    _next: int = 1
    submitted: int = 0
    completed: int = 0
    submissions: list[tuple[str, int]] = field(default_factory=list)

    def _up(self) -> None:
        if self.down:
            raise SlurmUnavailable("Unable to contact slurm controller (connect failure)")

    def ping(self) -> None:
        self._up()

    def version(self) -> str:
        self._up()
        return "slurm-wlm 22.05.8 (fake)"

    def jobs(self) -> list[SlurmJob]:
        self._up()
        self.schedule()
        return list(self._jobs.values())

    def nodes(self) -> list[Node]:
        self._up()
        state = "drained" if self.drained else "idle"
        return [Node(name="node0", state=state, cpus=64, alloc_cpus=self._busy_total(), partitions=tuple(self.caps),
                     flags=("DRAIN",) if self.drained else ())]

    def partitions(self) -> list[Partition]:
        self._up()
        return [Partition(name=p, state="UP", max_cpus_per_node=cap, total_cpus=64, usable_cpus=0 if p in self.drained else cap,
                          nodes=("node0",)) for p, cap in self.caps.items()]

    def submit_array(self, *, name: str, comment: str, partition: str, count: int, command: str, time_limit_s: int,
                     reservation: str | None = None) -> int:
        self._up()
        if partition not in self.caps:
            raise SlurmError(f"sbatch: error: invalid partition specified: {partition}")
        if reservation and reservation not in self._reservations:
            raise SlurmError(f"sbatch: error: Requested reservation is invalid: {reservation}")
        array = self._next
        wall = float(command.split()[1]) if command.startswith("sleep ") else 0.0
        for k in range(count):
            job_id = array if k == count - 1 else self._next + 1 + k  # Slurm numbers the last element with the array's id
            self._jobs[job_id] = SlurmJob(job_id=job_id, array_job_id=array, array_task_id=k, name=name, comment=comment,
                                          partition=partition, state="PENDING", reason="Priority", exit_code=0, cpus=1,
                                          start_time=None, end_time=None, reservation=reservation or "")
            self._wall[job_id] = wall
        self._next += count
        self.submitted += count
        self.submissions.append((comment, count))
        return array

    def cancel(self, job_ids: Sequence[int]) -> None:
        self._up()
        ids = set(job_ids)
        for jid, job in list(self._jobs.items()):
            if (jid in ids or job.array_job_id in ids) and job.state in ("PENDING", "RUNNING"):
                self._jobs[jid] = replace(job, state="CANCELLED", end_time=self.now())

    def create_reservation(self, *, name: str, partition: str, cores: int, start: datetime, duration_s: int) -> None:
        self._up()
        if name in self._reservations:
            raise SlurmError(f"Error creating the reservation: Duplicate reservation name {name}")
        self._reservations[name] = ReservationInfo(name=name, partition=partition, cores=cores, start=start,
                                                   end=start + timedelta(seconds=duration_s), state="INACTIVE")

    def delete_reservation(self, name: str) -> None:
        self._up()
        self._reservations.pop(name, None)

    def reservations(self) -> list[ReservationInfo]:
        self._up()
        return list(self._reservations.values())

    def diag(self) -> Diag:
        self._up()
        return Diag(submitted=self.submitted, started=sum(j.start_time is not None for j in self._jobs.values()),
                    completed=self.completed, canceled=0, failed=0)

    # ---------------------------------------------------------------- what a test drives

    def _busy(self, partition: str) -> int:
        return sum(j.cpus for j in self._jobs.values() if j.partition == partition and j.state == "RUNNING")

    def _busy_total(self) -> int:
        return sum(j.cpus for j in self._jobs.values() if j.state == "RUNNING")

    def schedule(self) -> None:
        """Start pending jobs where cores are free; end running ones whose wall time has passed."""
        now = self.now()
        for jid, job in sorted(self._jobs.items(), key=lambda kv: kv[1].array_job_id or kv[0]):
            if job.state == "RUNNING" and job.start_time is not None and \
                    (now - job.start_time).total_seconds() >= self._wall.get(jid, 0.0) and self._wall.get(jid, -1) >= 0:
                self.finish([jid])
        for jid, job in sorted(self._jobs.items(), key=lambda kv: (kv[1].array_job_id or kv[0], kv[1].array_task_id or 0)):
            if job.state == "PENDING" and job.partition not in self.drained and self._busy(job.partition) < self.caps[job.partition]:
                self._jobs[jid] = replace(job, state="RUNNING", reason="None", start_time=now)

    def finish(self, job_ids: Sequence[int], *, state: str = "COMPLETED", exit_code: int = 0, reason: str = "None") -> None:
        """End these jobs (ids of elements) now with ``state``."""
        for jid in job_ids:
            job = self._jobs[jid]
            self._jobs[jid] = replace(job, state=state, exit_code=exit_code, reason=reason, end_time=self.now(),
                                      start_time=job.start_time or self.now())
            if state == "COMPLETED" and exit_code == 0:
                self.completed += 1

    def hold(self, job_ids: Sequence[int]) -> None:
        """Keep these jobs running until :meth:`finish` (their wall time no longer ends them)."""
        for jid in job_ids:
            self._wall[jid] = -1.0

    def lose(self, job_ids: Sequence[int]) -> None:
        """Forget these jobs, as a controller restarted without its state would."""
        for jid in job_ids:
            self._jobs.pop(jid, None)

    def foreign(self, partition: str, cpus: int) -> int:
        """A running job that did not come from the market (someone's sbatch) holding ``cpus`` cores."""
        jid = self._next
        self._next += 1
        self._jobs[jid] = SlurmJob(job_id=jid, array_job_id=None, array_task_id=None, name="someone", comment="",
                                   partition=partition, state="RUNNING", reason="None", exit_code=0, cpus=cpus,
                                   start_time=self.now(), end_time=None)
        self._wall[jid] = -1.0
        return jid

    def by_comment(self, comment: str) -> list[SlurmJob]:
        return [j for j in self._jobs.values() if j.comment == comment]
