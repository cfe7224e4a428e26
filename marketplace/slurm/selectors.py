"""Reads of the Slurm backend: its status for the dashboard, a job's Slurm jobs for its page and the
cluster API, and every difference between the market's view and Slurm's (``manage.py slurm_check``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from marketplace.market.adapters import resource_types
from marketplace.market.models.market import Market
from marketplace.slurm.client import Partition, SlurmClient, SlurmJob
from marketplace.slurm.models import SlurmReservation, SlurmStatus, SlurmTask


def backend_enabled() -> bool:
    """True when the market runs its tasks on Slurm (``CLUSTER_BACKEND=slurm``)."""
    return bool(getattr(settings, "CLUSTER_BACKEND", "simulated") == "slurm")


def backend_status(*, market: Market) -> dict[str, Any]:
    """The backend as the dashboard shows it: ``kind`` ("simulated" or "slurm"); for Slurm also
    ``reachable``, ``unreachable_since``, ``error``, ``version``, ``nodes``, ``partitions`` (each with
    ``cpus_in_use`` by the market, ``foreign`` cores and ``free``), and ``polled_at``."""
    if not backend_enabled():
        return {"kind": "simulated"}
    status = SlurmStatus.objects.filter(market=market).first()
    if status is None:
        return {"kind": "slurm", "reachable": None, "partitions": [], "nodes": []}
    in_use = defaultdict(int)
    running = SlurmTask.objects.filter(market=market, state=SlurmTask.State.RUNNING)
    for partition, n in running.values_list("partition").annotate(n=Count("id")):
        in_use[partition] = n
    parts = []
    for p in status.partitions:
        foreign = int(status.foreign_cpus.get(p["name"], 0))
        used = in_use.get(p["name"], 0)
        parts.append({**p, "cpus_in_use": used, "foreign": foreign, "free": max(0, int(p["usable_cpus"]) - used - foreign)})
    return {"kind": "slurm", "reachable": status.reachable, "unreachable_since": status.unreachable_since, "error": status.error,
            "version": status.version, "nodes": status.nodes, "partitions": parts, "polled_at": status.polled_at}


def job_executions(*, market: Market, job_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Job -> its tasks on Slurm, newest first, in ``MarketPart.executions``' keys: ``id`` (Slurm's
    ``<array>_<index>``), ``executor`` ("slurm"), ``state`` (the market's view), ``executor_state`` (Slurm's),
    ``reason``, ``exit_code``, ``where`` (the partition), ``reservation``, ``attempt``, wall times."""
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in SlurmTask.objects.filter(market=market, job_id__in=job_ids).order_by("-id")[:2000]:
        out[t.job_id].append({
            "id": f"{t.slurm_job_id}_{t.index}" if t.slurm_job_id else None, "executor": "slurm", "state": t.state,
            "executor_state": t.slurm_state, "reason": t.reason, "exit_code": t.exit_code, "where": t.partition,
            "reservation": t.reservation or None,
            "attempt": t.attempt, "submitted_at": t.submitted_at, "started_at": t.started_at, "ended_at": t.ended_at,
        })
    return dict(out)


@dataclass(frozen=True)
class Difference:
    """One way the market's view and Slurm's differ: ``kind``, what it concerns, and whether ``--fix`` can repair it."""

    kind: str
    subject: str
    market: str
    slurm: str
    fixable: bool

    def __str__(self) -> str:
        return f"{self.kind}: {self.subject}: market says {self.market}; Slurm says {self.slurm}"


def differences(*, market: Market, client: SlurmClient) -> list[Difference]:
    """Every difference between the market's view (running tasks, reservations, capacities) and Slurm's.

    Raises:
        SlurmUnavailable: the controller did not answer.
    """
    prefix = f"mkt{market.pk}-{_token(market)}-"
    jobs = [j for j in client.jobs() if j.comment.startswith(prefix)]
    out = _task_differences(market, jobs)
    out += _reservation_differences(market, {r.name: r for r in client.reservations()}, prefix)
    out += _capacity_differences(market, {p.name: p for p in client.partitions()})
    return out


def _task_differences(market: Market, jobs: list[SlurmJob]) -> list[Difference]:
    out: list[Difference] = []
    live = (SlurmTask.State.SUBMITTED, SlurmTask.State.RUNNING)
    listed = {(j.comment, j.array_task_id): j for j in jobs}
    slurm_live = {key: j for key, j in listed.items() if j.state in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")}
    rows = {(t.key, t.index): t for t in SlurmTask.objects.filter(market=market).filter(
        Q(state__in=live) | Q(key__in={c for c, _ in slurm_live}))}
    for key, job in slurm_live.items():
        row = rows.get(key)
        if row is None or row.state not in live:
            out.append(Difference("orphan task", f"Slurm job {job.array_job_id or job.job_id}_{job.array_task_id}",
                                  "not running" if row is None else row.state, job.state, True))
    for key, row in rows.items():
        if row.state in live and key not in slurm_live:
            ended = listed.get(key)
            out.append(Difference("task not running", f"job {row.job_id} task {row.key}[{row.index}]", row.state,
                                  "not listed" if ended is None else ended.state, True))
    return out


def _token(market: Market) -> str:
    status = SlurmStatus.objects.filter(market=market).only("token").first()
    return status.token if status is not None and status.token else "none"


def _reservation_differences(market: Market, held: dict[str, Any], prefix: str) -> list[Difference]:
    out: list[Difference] = []
    ours = {r.name: r for r in SlurmReservation.objects.filter(market=market)}
    for name, r in ours.items():
        if r.created and name not in held and r.ends_at > timezone.now():
            out.append(Difference("reservation missing", name, f"{r.units} cores of {r.resource_type_id}", "none", True))
        elif name in held and held[name].cores != r.units:
            out.append(Difference("reservation size", name, f"{r.units} cores", f"{held[name].cores} cores", True))
    for name in held:
        if name.startswith(prefix) and name not in ours:
            out.append(Difference("reservation unknown to the market", name, "none", "held", True))
    return out


def _capacity_differences(market: Market, partitions: dict[str, Partition]) -> list[Difference]:
    out: list[Difference] = []
    for rt in resource_types(market):
        p = partitions.get(rt.name)
        if p is None:
            out.append(Difference("no partition", f"resource type {rt.name}", f"{rt.capacity} units", "no such partition", False))
        elif p.usable_cpus != rt.capacity:
            out.append(Difference("capacity", f"partition {rt.name}", f"{rt.capacity} units", f"{p.usable_cpus} usable cores", True))
    return out
