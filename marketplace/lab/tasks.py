"""Celery tasks of the lab: registered experiments and simulation studies on workers.

Thin and idempotent: a task takes ids, re-reads the world and calls one service.
Task names stay ``marketplace.tasks.<name>`` (the names queued messages, beat's schedule and the
services' ``publish_task`` calls use), whatever module defines them.
"""

from __future__ import annotations

from celery import Task, shared_task
from django.conf import settings

from marketplace.lab.services.experiments import experiment_execute, experiment_reap
from marketplace.lab.services.simulations import simulation_check, simulation_execute


@shared_task(name="marketplace.tasks.experiment_run_task", ignore_result=True, soft_time_limit=3600, time_limit=3660)
def experiment_run_task(run_id: int) -> str:
    """Run a queued experiment (a redelivered task finds it claimed and returns)."""
    return experiment_execute(run_id=run_id)


@shared_task(name="marketplace.tasks.experiment_reap_task", ignore_result=True)
def experiment_reap_task() -> int:
    """Mark runs whose worker died (stale heartbeat) failed (run by beat)."""
    return experiment_reap()


@shared_task(
    name="marketplace.tasks.simulation_run_task", ignore_result=True, acks_late=False, reject_on_worker_lost=False,
    soft_time_limit=settings.SIMULATION_TIME_LIMIT_S, time_limit=settings.SIMULATION_TIME_LIMIT_S + 60,
)
def simulation_run_task(run_id: int) -> str:
    """Run one configuration of a simulation study (queue ``simulation``; acked on receipt, so
    never redelivered: a killed worker's run is reaped as failed, see ``services.simulations``)."""
    return simulation_execute(run_id=run_id)


@shared_task(
    name="marketplace.tasks.experiment_part_task", bind=True, ignore_result=True, acks_late=False, reject_on_worker_lost=False,
    soft_time_limit=settings.SIMULATION_TIME_LIMIT_S, time_limit=settings.SIMULATION_TIME_LIMIT_S + 60,
)
def experiment_part_task(self: Task, run_id: int) -> str:
    """Run one part of a split experiment run (queue ``simulation``; acked on receipt like a
    simulation run); the part that ends last combines its parent (``services.parts``)."""
    return experiment_execute(run_id=run_id, worker=str(self.request.hostname or ""))


@shared_task(
    name="marketplace.tasks.simulation_check_task", ignore_result=True, acks_late=False, reject_on_worker_lost=False,
    soft_time_limit=settings.SIMULATION_UPLOAD_CHECK_S + 30, time_limit=settings.SIMULATION_UPLOAD_CHECK_S + 60,
)
def simulation_check_task(study_id: int) -> str:
    """Read a study's uploaded trace (lines and seconds limited), then queue its runs or refuse it (queue ``simulation``)."""
    return simulation_check(study_id=study_id)
