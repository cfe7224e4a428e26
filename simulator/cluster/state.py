"""Saving and restoring the cluster model (JSON-serialisable state).

A live market keeps its cluster on a database row between clock ticks; a
restored cluster continues exactly as if it had never been saved.
"""

from __future__ import annotations

from typing import Any

from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Reservation
from scheduler.registry import link_allocators
from simulator.cluster.core import ClusterCore
from simulator.cluster.jobs import JobState, inf_to_none, none_to_inf
from simulator.engine import EventQueue
from simulator.records import TaskLaunch

STATE_FORMAT = 2


def dump(c: ClusterCore, *, jobs: bool = True, placement: bool = True) -> dict[str, Any]:
    """Everything needed to continue the run (only dicts, lists, str, int, float,
    None; infinities stored as None). Without ``jobs``, no "jobs" entry (the jobs' counters
    are stored one record a job: ``simulator.market.delta``); without ``placement``, no
    "placement" entry (``simulator.market.delta`` packs it in columns)."""
    state = {
        "format": STATE_FORMAT,
        "now": c.now,
        "capacity": c.capacity.tolist(),
        "config": {
            "policy": c.policy,
            "t_wait": inf_to_none(c.t_wait),
            "history": [c.history, inf_to_none(c.history_length)],
            "dispatch": c.dispatch,
            "staged": c.staged,
            "seed": c.seed,
            "sample_interval": inf_to_none(c.sample_interval),
            "known_durations": c.known_durations,
        },
        "sample_clock": [c._sample_origin, c._sample_k],
        "next_key": c._next_key,
        "next_seq": c._next_seq,
        "reservations": [r.to_list() for r in c._reservations],
    }
    if placement:
        state["placement"] = c.placement.to_state()
    state |= {
        "events": c._events.to_state(),
        "allocators": [a.to_state() for a in c._allocators],
        "ledger": c._ledger.to_state(),
        "executor": {"kind": c.executor, "running": [list(p) for p in c._external.values()],
                     "launches": [t.to_list() for t in c.launches], "kills": list(c.kills)},
    }
    if jobs:
        state["jobs"] = [job.to_state() for job in c._jobs.values()]
    return state


def config_of(tree: QueueTree, state: dict[str, Any]) -> dict[str, Any]:
    """The ``Cluster`` keyword arguments saved in ``state``.

    Raises:
        ValueError: unknown state format or a tree with another number of leaves.
    """
    if state.get("format") != STATE_FORMAT:
        raise ValueError(f"unknown cluster state format {state.get('format')!r}")
    if len(state["placement"]["leaf_jobs"]) != len(tree.leaves):
        raise ValueError("the tree's leaves do not match the saved state")
    cfg = state["config"]
    history, length = cfg.get("history", ["forever", None])
    return {
        "history": history, "history_length": none_to_inf(length),
        "policy": cfg["policy"], "t_wait": none_to_inf(cfg["t_wait"]), "dispatch": cfg["dispatch"], "staged": cfg["staged"],
        "seed": cfg["seed"], "sample_interval": none_to_inf(cfg["sample_interval"]), "known_durations": cfg["known_durations"],
        "executor": state.get("executor", {}).get("kind", "simulated"),  # states saved before the seam ran simulated
    }


def restore(c: ClusterCore, tree: QueueTree, state: dict[str, Any]) -> None:
    """Load ``state`` into a cluster built with :func:`config_of`'s arguments."""
    origin, k = state["sample_clock"]
    c._sample_origin, c._sample_k = float(origin), int(k)
    c._next_key = int(state["next_key"])
    c._next_seq = int(state["next_seq"])
    c._jobs = {int(s["job_id"]): JobState.from_state(s) for s in state["jobs"]}
    c._reservations = tuple(Reservation.from_list(row) for row in state["reservations"])
    reserved = {r.job_id for r in c._reservations}
    c.placement.load(state["placement"])
    c._active = {jid: c._jobs[jid] for jid in sorted(c.active_jobs(), key=c.arrival_rank)}
    c._events = EventQueue.from_state(state["events"])
    books = state.get("executor", {})
    c._external = {int(p[3]): [int(p[0]), int(p[1]), int(p[2]), int(p[3]), int(p[4]), int(p[5]), int(p[6]), float(p[7]), float(p[8])]
                   for p in books.get("running", [])}
    c.launches = [TaskLaunch.from_list(row) for row in books.get("launches", [])]
    c.kills = [int(k) for k in books.get("kills", [])]
    factory = type(c._allocators[0])
    c._allocators = [factory.from_state(tree, a) for a in state["allocators"]]
    link_allocators(c._allocators)
    c._ledger.load_integrals(state["ledger"])
    for job in c._jobs.values():
        job.reserved = job.job_id in reserved
        if not job.active:
            continue
        for j in range(c.m):
            c._count_eligible(job, j, job.eligible_pending(j, c.staged))
            c._ledger.add_running(job.leaf, j, job.running[j])
            c._busy[j] += job.running[j]
