"""Split runs: an experiment that declares parts runs as a parent and one child
run per part, each its own task on the ``simulation`` queue; the parent is combined from its
parts, fails with a part, is cancelled with them, and is never run, reaped or published itself.

Eager Celery (the test default) runs each part's task at its publication, after commit; the
wiring on a real worker is ``tests/integration/test_simulation_worker.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from marketplace.lab.models import ExperimentRun
from marketplace.lab.services import experiments as svc
from marketplace.lab.services import parts as parts_svc
from marketplace.lab.services import runs
from simulator import experiments
from simulator.experiments import Experiment, table

CALLS: list[int] = []  # the part run by each call of the experiment (-1: the whole)
PEEK: list[Callable[[int], None]] = []  # called after each progress report, with the part


def _sweep(params: experiments.Params, progress: experiments.Progress) -> experiments.Result:
    """Squares of ``values``; with ``part`` >= 0 only ``values[part]``; ``fail_part`` raises there."""
    part = int(params["part"])
    CALLS.append(part)
    picked = [params["values"][part]] if part >= 0 else list(params["values"])
    progress(0.5, "half way")
    for peek in PEEK:
        peek(part)
    progress(0.9, "nearly there")
    if part >= 0 and part == params["fail_part"]:
        raise RuntimeError(f"boom in part {part}")
    return {"rows": [[v, v * v] for v in picked], "figures": [], "tables": [], "summary": f"{len(picked)} values"}


def _shards(params: experiments.Params) -> list[dict[str, Any]]:
    return [{**params, "part": k} for k in range(len(params["values"]))]


def _combine(params: experiments.Params, parts: Any) -> experiments.Result:
    rows = [row for part in parts for row in part["rows"]]
    return {"figures": [], "tables": [table("squares", ["v", "v²"], rows)], "summary": f"{len(rows)} squares"}


def _whole(params: experiments.Params, progress: experiments.Progress) -> experiments.Result:
    if int(params["part"]) >= 0:
        return _sweep(params, progress)
    return _combine(params, [_sweep({**params, "part": k}, progress) for k in range(len(params["values"]))])


experiments.register(Experiment(
    name="lab_sweep", title="Sweep", source="test", run=_whole, shards=_shards, combine=_combine,
    defaults={"values": [2, 3, 5], "part": -1, "fail_part": -1},
))  # fmt: skip

STRIP = ("wall_s", "workers")


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.EXPERIMENTS_IN_THREAD = False  # a broker (eager here): runs are split
    settings.SIMULATION_MAX_ATTEMPTS = 2
    settings.EXPERIMENT_RETRY_BACKOFF_S = 0.0
    monkeypatch.setattr(svc, "PROGRESS_EVERY_S", 0.0)
    CALLS.clear()
    PEEK.clear()


def _start(user: Any, capture: Any, *, execute: bool = True, name: str = "lab_sweep", **params: Any) -> ExperimentRun:
    with capture(execute=execute):
        run = svc.experiment_start(name=name, params=params, user=user)
    run.refresh_from_db()
    return run


def _parts(run: ExperimentRun) -> list[ExperimentRun]:
    return list(ExperimentRun.objects.filter(parent=run).order_by("part_index"))


def _without(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in STRIP}


def test_a_split_run_combines_its_parts_into_the_plain_runs_result(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    # given a run of an experiment with three parts; when it is started and its parts run
    run = _start(staff, django_capture_on_commit_callbacks, values=[2, 3, 5, 7])
    parts = _parts(run)
    # then each part ran once, on its own, and the parent was never run whole
    assert sorted(CALLS) == [0, 1, 2, 3] and [p.part_index for p in parts] == [0, 1, 2, 3]
    assert all(p.status == "done" and p.attempts == 1 and p.max_attempts == 2 for p in parts)
    assert [p.label for p in parts] == [f"part={k}" for k in range(4)]
    # and the parent is done with the result the plain run and run_in_parts give
    assert (run.status, run.progress, run.attempts) == ("done", 1.0, 0) and run.message.startswith("done: 4 parts")
    assert run.result.get("workers", 0) == len({p.worker for p in parts if p.worker})  # eager: this process's one name
    plain = experiments.run("lab_sweep", {"values": [2, 3, 5, 7]})
    assert _without(run.result) == plain == experiments.run_in_parts("lab_sweep", {"values": [2, 3, 5, 7]})
    assert run.result["wall_s"] >= 0 and run.started_at <= run.finished_at


def test_the_published_study_split_equals_its_plain_run(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    params = {"quick": True, "traces": ["fb2009"], "seeds": 2, "policies": ["H-LTRF", "DRF"]}
    run = _start(staff, django_capture_on_commit_callbacks, name="published_schedulers", **params)
    assert [p.params["cell"] for p in _parts(run)] == [["fb2009", 0], ["fb2009", 1]]
    assert run.status == "done" and all(p.status == "done" for p in _parts(run))
    plain = experiments.run("published_schedulers", params)
    assert _without(run.result) == _without(plain) == _without(experiments.run_in_parts("published_schedulers", params))


def test_parts_are_created_with_the_parent_and_published_after_commit(staff, django_capture_on_commit_callbacks, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    sent: list[tuple[int, str]] = []
    monkeypatch.setattr(runs, "publish_task", lambda task, run_id: sent.append((run_id, task)) or True)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = svc.experiment_start(name="lab_sweep", params={}, user=staff)
        assert len(_parts(run)) == 3 and sent == []  # in the parent's transaction, nothing published yet
    for callback in callbacks:
        callback()
    assert sent == [(p.pk, runs.KINDS["part"].task) for p in _parts(run)]  # the parent never
    assert runs.KINDS["part"].queue == "simulation"
    assert all(p.enqueued_at is not None for p in _parts(run)) and ExperimentRun.objects.get(pk=run.pk).enqueued_at is None


def test_the_in_thread_executor_is_the_kinds_registered_task(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    # given a split run whose parts were never published
    run = _start(staff, django_capture_on_commit_callbacks, execute=False, values=[2, 3])
    # when each part is executed as the in-thread mode does it (the part task, by name, here)
    for part in _parts(run):
        runs.KINDS["part"].execute(part.pk)
    # then the parts ran, and the last one combined the parent
    run.refresh_from_db()
    assert sorted(CALLS) == [0, 1] and run.status == "done" and [r[1] for r in run.result["tables"][0]["rows"]] == [4, 9]


def test_unsplit_runs_in_thread_mode_and_when_the_params_name_one_part(staff, django_capture_on_commit_callbacks, settings) -> None:  # type: ignore[no-untyped-def]
    one = _start(staff, django_capture_on_commit_callbacks, part=1)  # one part asked: run as it is
    assert (one.status, one.result["rows"], _parts(one)) == ("done", [[3, 9]], [])
    settings.EXPERIMENTS_IN_THREAD = True  # the embedded default: the whole run stays one background thread
    whole = _start(staff, django_capture_on_commit_callbacks, execute=False)
    assert _parts(whole) == []


def test_parent_progress_is_the_mean_of_its_parts_and_counts_the_parts_done(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    seen: list[tuple[int, float, str, str]] = []

    def peek(part: int) -> None:
        parent = ExperimentRun.objects.get(parent__isnull=True, name="lab_sweep")
        seen.append((part, parent.progress, parent.message, parent.status))

    PEEK.append(peek)
    run = _start(staff, django_capture_on_commit_callbacks, values=[1, 2])
    # part 0 at 0.5 of 2 parts -> 0.25; part 1 at 0.5 with part 0 done -> 0.75
    assert seen == [(0, pytest.approx(0.25), "0 of 2 parts done", "running"), (1, pytest.approx(0.75), "1 of 2 parts done", "running")]
    assert run.status == "done"


def test_a_part_failing_for_good_fails_the_parent_and_cancels_its_queued_siblings(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    # given three parts, the second of which always raises (2 attempts each); eager Celery runs them in order
    run = _start(staff, django_capture_on_commit_callbacks, fail_part=1)
    first, second, third = _parts(run)
    # then the second was tried twice, the parent failed naming it, and the third never ran
    assert (first.status, second.status, second.attempts, third.status) == ("done", "failed", 2, "cancelled")
    assert CALLS == [0, 1, 1] and third.message == "cancelled: part 2 failed"
    assert run.status == "failed" and run.message.startswith("part 2 of 3 (part=1) failed: failed: RuntimeError after 2 attempts")
    assert "boom in part 1" in run.error and run.result is None


def test_cancelling_the_parent_cancels_its_parts(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    # given a split run whose parts are queued (not yet published)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = svc.experiment_start(name="lab_sweep", params={}, user=staff)
    first, *_ = _parts(run)
    ExperimentRun.objects.filter(pk=first.pk).update(status="running", started_at=timezone.now())  # one part on a worker
    # when the parent is cancelled
    assert svc.experiment_cancel(run_id=run.pk, user=staff).status == "cancelled"
    # then the queued parts are cancelled at once, the running one is asked to stop
    statuses = [(p.status, p.cancel_requested) for p in _parts(run)]
    assert statuses == [("running", True), ("cancelled", False), ("cancelled", False)]
    for callback in callbacks:  # a late publication runs nothing
        callback()
    assert CALLS == []


def test_a_running_part_stops_at_its_next_progress_update_when_the_parent_is_cancelled(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    PEEK.append(lambda part: svc.experiment_cancel(run_id=ExperimentRun.objects.get(parent__isnull=True).pk, user=staff))
    run = _start(staff, django_capture_on_commit_callbacks)
    assert run.status == "cancelled" and [p.status for p in _parts(run)] == ["cancelled"] * 3 and CALLS == [0]
    # cancelling a part cancels the whole (its result needs every part); an ended run is left alone
    assert svc.experiment_cancel(run_id=_parts(run)[1].pk, user=staff).pk == run.pk


def test_a_duplicate_delivery_of_a_part_does_nothing(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    run = _start(staff, django_capture_on_commit_callbacks)
    part = _parts(run)[1]
    before = len(CALLS)
    assert svc.experiment_execute(run_id=part.pk, worker="late@host") == "done"
    after = ExperimentRun.objects.get(pk=run.pk)
    assert len(CALLS) == before and (after.result, after.finished_at) == (run.result, run.finished_at)
    assert ExperimentRun.objects.get(pk=part.pk).worker == part.worker


def test_the_reaper_leaves_a_parent_alone_and_settles_one_whose_parts_all_ended(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    # given a running parent with an old heartbeat whose parts are queued (no worker free yet)
    with django_capture_on_commit_callbacks(execute=False):
        run = svc.experiment_start(name="lab_sweep", params={"values": [4, 6]}, user=staff)
    old = timezone.now() - timedelta(hours=1)
    ExperimentRun.objects.filter(pk=run.pk).update(status="running", started_at=old, heartbeat_at=old)
    # then the reaper takes nothing: the parent has no worker to lose
    assert svc.experiment_reap(stale_after_s=1.0) == 0
    assert ExperimentRun.objects.get(pk=run.pk).status == "running"
    # given its parts ran but the worker died before settling the parent (its settle lost)
    ExperimentRun.objects.filter(parent=run).update(status="running", started_at=old, heartbeat_at=timezone.now())
    for part in _parts(run):
        svc._execute(part, None)  # runs the claimed part without the parent's bookkeeping
    assert ExperimentRun.objects.get(pk=run.pk).status == "running"
    # then the reaper's pass combines it
    assert svc.experiment_reap(stale_after_s=1.0) == 0
    run.refresh_from_db()
    assert run.status == "done" and _without(run.result) == experiments.run("lab_sweep", {"values": [4, 6]})


def test_the_reaper_fails_the_parent_of_a_lost_part_without_attempts_left(staff, django_capture_on_commit_callbacks, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SIMULATION_MAX_ATTEMPTS = 1
    with django_capture_on_commit_callbacks(execute=False):
        run = svc.experiment_start(name="lab_sweep", params={}, user=staff)
    second = _parts(run)[1]
    old = timezone.now() - timedelta(hours=1)
    ExperimentRun.objects.filter(pk=run.pk).update(status="running", started_at=old, heartbeat_at=old)
    ExperimentRun.objects.filter(pk=second.pk).update(status="running", attempts=1, started_at=old, heartbeat_at=old)
    assert svc.experiment_reap(stale_after_s=60.0) == 1  # the part, not the parent
    run.refresh_from_db()
    assert run.status == "failed" and run.message.startswith("part 2 of 3 (part=1) failed: worker lost (no heartbeat)")
    assert [p.status for p in _parts(run)] == ["cancelled", "failed", "cancelled"]


def test_the_sweeper_publishes_unpublished_parts_but_never_a_parent(staff, django_capture_on_commit_callbacks, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # given a split run started while the broker was down: nothing published
    monkeypatch.setattr(runs, "publish_task", lambda task, run_id: False)
    run = _start(staff, django_capture_on_commit_callbacks)
    assert all(p.enqueued_at is None for p in [run, *_parts(run)])
    ExperimentRun.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    # when the broker is back, the sweeper's requeue publishes the parts only
    sent: list[tuple[int, str]] = []
    monkeypatch.setattr(runs, "publish_task", lambda task, run_id: sent.append((run_id, task)) or True)
    assert svc.experiment_requeue() == [p.pk for p in _parts(run)]
    assert sent == [(p.pk, runs.KINDS["part"].task) for p in _parts(run)] and svc.experiment_publish(run_ids=[run.pk]) == []
    assert svc.experiment_requeue() == []  # published now


def test_pages_list_the_parent_and_show_its_parts(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    run = _start(staff, django_capture_on_commit_callbacks, values=[1, 2])
    ops = Client()
    ops.force_login(staff)
    index = ops.get(reverse("lab"))
    assert [r.pk for r in index.context["runs"]] == [run.pk]  # the parts do not clutter the list
    assert index.context["cards"][[c["experiment"].name for c in index.context["cards"]].index("lab_sweep")]["latest"].pk == run.pk
    page = ops.get(reverse("lab-run", args=[run.pk]))
    assert page.status_code == 200 and b'id="run-parts"' in page.content and b"part=1" in page.content
    status = ops.get(reverse("lab-run-status", args=[run.pk])).json()
    assert [(p["part"], p["label"], p["status"], p["progress"], p["attempts"]) for p in status["parts"]] == [
        (1, "part=0", "done", 1.0, 1), (2, "part=1", "done", 1.0, 1)]
    assert all(p["wall_s"] is not None and p["wall_s"] >= 0 for p in status["parts"])
    part = ops.get(reverse("lab-run", args=[_parts(run)[1].pk]))
    assert part.status_code == 200 and b'id="run-part-of"' in part.content and b"Part 2 of 2" in part.content


def test_is_parent_picks_the_runs_with_parts(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    run = _start(staff, django_capture_on_commit_callbacks, execute=False)
    assert list(ExperimentRun.objects.filter(parts_svc.is_parent()).values_list("pk", flat=True)) == [run.pk]
