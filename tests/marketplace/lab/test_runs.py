"""The lab's one table of background work (``services.runs``): each kind is a registered task on
its routed queue, a thread runs its ids in order after the countdown, and a broker gets each id
through ``publish_task`` (its breaker included) and never a delayed one."""

from __future__ import annotations

import time
from typing import Any

import pytest

from marketplace.celery import app
from marketplace.lab.services import runs
from tests.test_import_cycles import ROOT, cycles, import_graph, module_files

ROUTED = {"experiment": "celery", "part": "simulation", "simulation": "simulation", "check": "simulation"}


@pytest.mark.parametrize("kind", list(runs.KINDS))
def test_each_kind_is_a_registered_task_routed_to_its_queue(kind: runs.Kind) -> None:
    spec = runs.KINDS[kind]
    assert spec.task in app.tasks
    assert app.amqp.router.route({}, spec.task)["queue"].name == (spec.queue or app.conf.task_default_queue) == ROUTED[kind]


@pytest.mark.parametrize(
    ("study_id", "parent_id", "kind"),
    [(None, None, "experiment"), (None, 7, "part"), (3, None, "simulation")],
    ids=["a plain run", "a part of a split run", "a study's run"],
)
def test_run_kind(study_id: int | None, parent_id: int | None, kind: str) -> None:
    assert runs.run_kind(study_id=study_id, parent_id=parent_id) == kind


def test_a_thread_runs_the_ids_in_order_after_the_countdown_past_a_failing_one(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # given the in-thread mode and an executor that fails on id 2
    settings.EXPERIMENTS_IN_THREAD = True
    seen: list[tuple[str, int, float]] = []

    def execute(spec: runs.RunKind, pk: int) -> None:
        seen.append((spec.task, pk, time.monotonic()))
        if pk == 2:
            raise RuntimeError("boom")

    monkeypatch.setattr(runs.RunKind, "execute", execute)
    monkeypatch.setattr(runs, "publish_task", lambda *a: pytest.fail("a thread, not the broker"))
    # when three ids are handed with a countdown
    start = time.monotonic()
    assert runs.task_publish(kind="simulation", ids=[1, 2, 3], countdown=0.2) == [1, 2, 3]
    runs._threads[-1].join(timeout=10)
    # then all three ran, in order, not before the countdown, the failure notwithstanding
    assert [(task, pk) for task, pk, _ in seen] == [(runs.KINDS["simulation"].task, pk) for pk in (1, 2, 3)]
    assert seen[0][2] - start >= 0.2


def test_a_broker_gets_each_id_through_publish_task_and_none_delayed(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # given a broker that refuses id 2
    settings.EXPERIMENTS_IN_THREAD = False
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(runs, "publish_task", lambda *a: sent.append(a) or a[1] != 2)
    # then the ids it took are handed, in order, each as the kind's task
    assert runs.task_publish(kind="check", ids=[1, 2, 3]) == [1, 3]
    assert sent == [(runs.KINDS["check"].task, pk) for pk in (1, 2, 3)]
    # and a delayed publication is left to the sweeper: nothing is sent
    assert runs.task_publish(kind="experiment", ids=[4], countdown=5.0) == [] and len(sent) == 3


def test_the_lab_has_no_import_circle() -> None:
    # every import statement counts, inside functions too (tests/test_import_cycles.py walks them)
    graph = import_graph(module_files(ROOT, ("marketplace",)))
    assert {"marketplace.lab.services.runs", "marketplace.lab.services.experiments", "marketplace.lab.services.simulations"} <= set(graph)
    lab = {m: {n for n in graph[m] if n.startswith("marketplace.lab")} for m in graph if m.startswith("marketplace.lab")}
    assert cycles(lab) == []
    # runs.py is the bottom of lab.services: it imports none of the services that publish through it
    assert not {m for m in lab["marketplace.lab.services.runs"] if m.startswith("marketplace.lab.services.")}
