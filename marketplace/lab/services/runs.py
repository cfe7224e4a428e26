"""How the lab's background work reaches a worker: one table from a kind of work to its task.

Each kind (``KINDS``) names the registered Celery task that executes it (``lab.tasks``: the
task is the executor, a thin wrapper of one service) and the queue ``CELERY_TASK_ROUTES``
sends it to. :func:`task_publish` hands ids to a kind's task in one of two ways:

* ``EXPERIMENTS_IN_THREAD`` (the embedded default, no broker): one daemon thread of this
  process runs the task bodies in order, as a worker would, after ``countdown`` seconds;
* otherwise each id is published through ``infra.resilience.publish_task``, behind its
  circuit breaker: when the broker is down nothing is raised, the id is simply not handed,
  and the sweeper publishes it later from the database (``experiments.experiment_requeue``,
  ``simulations.simulation_check_requeue``).

This module sits at the bottom of ``lab.services``: it reaches the executors by task name,
through Celery's registry, never by importing the services that publish through it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from django.conf import settings
from django.db import connection

from marketplace.celery import app
from marketplace.infra.resilience import publish_task

log = logging.getLogger(__name__)

Kind = Literal["experiment", "part", "simulation", "check"]
SIMULATION_QUEUE = "simulation"
_threads: list[threading.Thread] = []  # the in-thread mode's threads; tests may join them


@dataclass(frozen=True)
class RunKind:
    """A kind of background work: ``task`` is the registered Celery task that executes one id
    (a run's, or a study's for "check"); ``queue`` is where ``CELERY_TASK_ROUTES`` routes it
    (None: Celery's default queue), the queue a worker must consume to run it."""

    task: str
    queue: str | None

    def execute(self, pk: int) -> None:
        """Run the task's body here, in this thread, as a worker would (the in-thread mode)."""
        app.tasks[self.task](pk)


KINDS: dict[Kind, RunKind] = {
    "experiment": RunKind("marketplace.tasks.experiment_run_task", None),
    "part": RunKind("marketplace.tasks.experiment_part_task", SIMULATION_QUEUE),  # a part of a split run
    "simulation": RunKind("marketplace.tasks.simulation_run_task", SIMULATION_QUEUE),  # a study's run
    "check": RunKind("marketplace.tasks.simulation_check_task", SIMULATION_QUEUE),  # a study's uploaded trace
}


def run_kind(*, study_id: int | None, parent_id: int | None) -> Kind:
    """The kind of an ``ExperimentRun``: a study's run, a part of a split run, or a plain run."""
    return "simulation" if study_id is not None else "part" if parent_id is not None else "experiment"


def in_thread() -> bool:
    """True when the lab runs its work in threads of this process (``EXPERIMENTS_IN_THREAD``)."""
    return bool(getattr(settings, "EXPERIMENTS_IN_THREAD", False))


def task_publish(*, kind: Kind, ids: Sequence[int], countdown: float = 0.0) -> list[int]:
    """Hand ``ids`` to ``kind``'s task; returns those handed, in order.

    In-thread mode: all of them, to one new daemon thread that runs them one after the other
    after ``countdown`` wall seconds. With a broker: those ``publish_task`` published; one it
    could not (broker down, or its breaker open) is left to the sweeper. A ``countdown`` > 0
    hands nothing to the broker: ``publish_task`` sends at once, and a delayed start lives in
    the database instead (a run's ``retry_at``), which the sweeper publishes once due.
    """
    spec = KINDS[kind]
    if in_thread():
        thread = threading.Timer(countdown, _execute_in_thread, args=(spec, list(ids)))
        thread.daemon = True
        _threads.append(thread)
        thread.start()
        return list(ids)
    if countdown > 0:
        return []
    return [pk for pk in ids if publish_task(spec.task, pk)]


def _execute_in_thread(spec: RunKind, ids: list[int]) -> None:
    try:
        for pk in ids:
            try:
                spec.execute(pk)
            except Exception:  # one failure must not strand the others; the executors record their own
                log.exception("%s of %s failed in its thread", spec.task, pk)
    finally:
        connection.close()  # the thread's own connection: Django opens one per thread
