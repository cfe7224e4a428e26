"""Experiment runs as background jobs: start, claim once, progress, cancel, failure, reaping, pages."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import QueryDict
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from marketplace.lab.models import ExperimentRun
from marketplace.lab.services import experiments as svc
from marketplace.lab.services.simulations import simulation_execute
from marketplace.market.models.tenants import Tenant
from simulator import experiments
from simulator.experiments import Experiment, figure, table

CALLS: list[int] = []


def _steps(params: experiments.Params, progress: experiments.Progress) -> experiments.Result:
    CALLS.append(int(params["steps"]))
    for k in range(int(params["steps"])):
        progress(k / params["steps"], f"step {k}")
        if params["fail_at"] == k:
            raise RuntimeError(f"boom at step {k}")
    xs = list(range(int(params["steps"])))
    return {
        "figures": [figure("squares", [{"type": "scatter", "x": xs, "y": [x * x for x in xs]}], x_title="k", y_title="k²")],
        "tables": [table("squares", ["k", "k²"], [[x, x * x] for x in xs])],
        "summary": "squares done",
    }


experiments.register(Experiment(name="lab_steps", title="Steps", source="test", run=_steps, defaults={"steps": 3, "fail_at": -1}))


@pytest.fixture(autouse=True)
def _inline(settings):  # type: ignore[no-untyped-def]
    settings.EXPERIMENTS_IN_THREAD = False  # eager Celery runs the task at commit, in this thread


def _start(user: Any, django_capture_on_commit_callbacks: Any, **params: Any) -> ExperimentRun:
    with django_capture_on_commit_callbacks(execute=True):
        run = svc.experiment_start(name="lab_steps", params=params, user=user)
    run.refresh_from_db()
    return run


def test_a_staff_run_executes_to_done_and_stores_its_result(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    run = _start(staff, django_capture_on_commit_callbacks, steps=4)
    assert run.status == "done" and run.progress == 1.0
    assert run.params == {"steps": 4, "fail_at": -1}
    assert run.result["tables"][0]["rows"][-1] == [3, 9]
    assert run.started_at <= run.finished_at


def test_a_second_delivery_of_the_same_run_does_nothing(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    run = _start(staff, django_capture_on_commit_callbacks, steps=2)
    before = len(CALLS)
    assert svc.experiment_execute(run_id=run.pk) == "done"
    assert len(CALLS) == before


def test_tenants_cannot_start_runs_and_bad_params_are_field_errors(staff, alice: Tenant) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PermissionDenied):
        svc.experiment_start(name="lab_steps", params={}, user=alice.user)
    with pytest.raises(ValidationError) as err:
        svc.experiment_start(name="lab_steps", params={"steps": "many"}, user=staff)
    assert "params" in err.value.message_dict
    with pytest.raises(ValidationError) as err:
        svc.experiment_start(name="nope", params={}, user=staff)
    assert "name" in err.value.message_dict
    assert not ExperimentRun.objects.exists()


def test_a_failing_experiment_is_marked_failed_with_its_error(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    run = _start(staff, django_capture_on_commit_callbacks, steps=3, fail_at=1)
    assert run.status == "failed" and "boom at step 1" in run.error and run.result is None


def test_cancel_stops_a_running_run_at_its_next_progress_update(staff, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(svc, "PROGRESS_EVERY_S", 0.0)
    run = ExperimentRun.objects.create(name="lab_steps", params={"steps": 5, "fail_at": -1}, created_by=staff)

    def cancelling(params: experiments.Params, progress: experiments.Progress) -> experiments.Result:
        progress(0.1, "first")
        svc.experiment_cancel(run_id=run.pk, user=staff)
        progress(0.2, "second")  # raises Cancelled
        raise AssertionError("not reached")

    monkeypatch.setitem(
        experiments.EXPERIMENTS,
        "lab_steps",
        Experiment(name="lab_steps", title="", source="", run=cancelling, defaults={"steps": 3, "fail_at": -1}),
    )
    assert svc.experiment_execute(run_id=run.pk) == "cancelled"
    run.refresh_from_db()
    assert run.progress == pytest.approx(0.1) and run.result is None


def test_a_run_deleted_while_it_runs_stops_quietly_at_its_next_progress_update(staff, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(svc, "PROGRESS_EVERY_S", 0.0)
    run = ExperimentRun.objects.create(name="lab_steps", params={"steps": 5, "fail_at": -1}, created_by=staff)
    steps: list[str] = []

    def deleted_midway(params: experiments.Params, progress: experiments.Progress) -> experiments.Result:
        progress(0.1, "first")
        steps.append("first")
        ExperimentRun.objects.filter(pk=run.pk).delete()  # an administrator deletes it
        progress(0.2, "second")  # raises Cancelled: its row is gone
        steps.append("second")
        raise AssertionError("not reached")

    monkeypatch.setitem(
        experiments.EXPERIMENTS,
        "lab_steps",
        Experiment(name="lab_steps", title="", source="", run=deleted_midway, defaults={"steps": 3, "fail_at": -1}),
    )
    with caplog.at_level("INFO"):
        assert svc.experiment_execute(run_id=run.pk) == svc.GONE
    assert steps == ["first"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # not an error: nothing to record
    assert not ExperimentRun.objects.filter(pk=run.pk).exists()  # nothing was written back


def test_a_run_deleted_before_it_starts_is_gone_for_a_run_and_a_studys_run(staff) -> None:  # type: ignore[no-untyped-def]
    run = ExperimentRun.objects.create(name="lab_steps", params={"steps": 1, "fail_at": -1}, created_by=staff)
    ExperimentRun.objects.filter(pk=run.pk).delete()
    assert svc.experiment_execute(run_id=run.pk) == svc.GONE
    assert simulation_execute(run_id=run.pk) == svc.GONE
    assert not ExperimentRun.objects.exists()


def test_cancel_before_start_and_who_may_cancel(staff, alice: Tenant) -> None:  # type: ignore[no-untyped-def]
    run = ExperimentRun.objects.create(name="lab_steps", params={"steps": 1, "fail_at": -1}, created_by=staff)
    with pytest.raises(PermissionDenied):
        svc.experiment_cancel(run_id=run.pk, user=alice.user)
    assert svc.experiment_cancel(run_id=run.pk, user=staff).status == "cancelled"
    assert svc.experiment_execute(run_id=run.pk) == "cancelled"  # a late delivery does not run it


def test_reap_fails_only_runs_with_a_stale_heartbeat(staff) -> None:  # type: ignore[no-untyped-def]
    old = timezone.now() - timedelta(seconds=600)
    stale = ExperimentRun.objects.create(name="lab_steps", status="running", heartbeat_at=old, created_by=staff)
    fresh = ExperimentRun.objects.create(name="lab_steps", status="running", heartbeat_at=timezone.now())
    assert svc.experiment_reap(stale_after_s=300) == 1
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert (stale.status, fresh.status) == ("failed", "running")


def test_pages_staff_start_everyone_reads_and_csv(staff, alice: Tenant, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    tenant, ops = Client(), Client()
    tenant.force_login(alice.user)
    ops.force_login(staff)
    page = tenant.get(reverse("lab"))
    assert page.status_code == 200 and b"Steps" in page.content and b'name="p_steps"' not in page.content
    assert tenant.post(reverse("lab"), {"name": "lab_steps"}).status_code == 403

    bad = ops.post(reverse("lab"), {"name": "lab_steps", "p_steps": "[1"})
    assert bad.status_code == 400 and b"Enter a whole number like 3" in bad.content
    assert not ExperimentRun.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        started = ops.post(reverse("lab"), {"name": "lab_steps", "p_steps": "3"})
    run = ExperimentRun.objects.get()
    assert started.status_code == 302 and started["Location"] == reverse("lab-run", args=[run.pk])

    detail = tenant.get(reverse("lab-run", args=[run.pk]))
    assert detail.status_code == 200 and b"squares done" in detail.content and b'id="figure-0"' in detail.content
    status = tenant.get(reverse("lab-run-status", args=[run.pk])).json()
    assert status == {"status": "done", "progress": 1.0, "message": "done", "attempts": 1, "max_attempts": 1, "finished": True,
                      "elapsed_s": None}
    csv_text = tenant.get(reverse("lab-run-table-csv", args=[run.pk, 0])).content.decode()
    assert csv_text.splitlines() == ["k,k²", "0,0", "1,1", "2,4"]
    assert tenant.get(reverse("lab-run-table-csv", args=[run.pk, 1])).status_code == 404
    assert tenant.get(reverse("lab-run-json", args=[run.pk])).json()["summary"] == "squares done"
    assert Client().get(reverse("lab")).status_code == 302  # anonymous: to the login page


experiments.register(Experiment(name="lab_typed", title="Typed", source="test", run=_steps,
                                defaults={"steps": 3, "rate": 0.5, "quick": True, "seeds": [0, 1], "traces": ["fb2009", "kth"],
                                          "label": "x"},
                                choices={"traces": ["fb2009", "kth", "Tiresias, three limits"]}))


def test_each_parameter_gets_a_field_of_its_type(staff) -> None:  # type: ignore[no-untyped-def]
    from marketplace.lab.forms import parse_params

    ops = Client()
    ops.force_login(staff)
    page = ops.get(reverse("lab")).content.decode()
    # a number box for numbers, a checkbox for a flag, comma-separated text for a list: no JSON to type
    assert re.search(r'id="lab_typed-steps" name="p_steps" value="3"\s+type="number" step="1"', page)
    assert re.search(r'id="lab_typed-rate" name="p_rate" value="0.5"\s+type="number" step="any"', page)
    assert re.search(r'type="checkbox" id="lab_typed-quick" name="p_quick"\s*checked', page)
    assert 'name="p_seeds" value="0, 1"' in page
    # a list of declared choices is a box per choice, the default's ticked (a name may hold a comma)
    assert re.search(r'<fieldset class="choices" id="lab_typed-traces"', page)
    assert re.search(r'name="p_traces" value="fb2009" checked', page) and re.search(r'name="p_traces" value="kth" checked', page)
    assert re.search(r'name="p_traces" value="Tiresias, three limits">', page)
    # the page's own form: typed values back, an unticked box is False, lists keep their items' types
    exp = experiments.get("lab_typed")
    got, errors = parse_params(exp, QueryDict("typed_form=1&p_steps=5&p_rate=2&p_seeds=3,+4,5&p_traces=kth&p_label=y"))
    assert errors == {}
    assert got == {"steps": 5, "rate": 2.0, "quick": False, "seeds": [3, 4, 5], "traces": ["kth"], "label": "y"}
    names = QueryDict("typed_form=1&p_traces=fb2009&p_traces=Tiresias,+three+limits")  # two chosen names, one with a comma
    assert parse_params(exp, names)[0]["traces"] == ["fb2009", "Tiresias, three limits"]
    assert isinstance(got["rate"], float) and all(isinstance(s, int) for s in got["seeds"])
    # a bad value names its field and the shape it wants; nothing else is lost
    got, errors = parse_params(exp, {"typed_form": "1", "p_steps": "many", "p_seeds": "1, two", "p_quick": "on", "p_traces": "kth"})
    assert set(errors) == {"steps", "seeds"} and "whole number" in errors["steps"] and "commas" in errors["seeds"]
    assert got == {"quick": True, "traces": ["kth"]}
    # a post without the form's marker (a script) keeps the flag's default
    assert parse_params(exp, {"p_steps": "4"}) == ({"steps": 4}, {})


def test_a_long_experiment_states_its_wall_time_before_it_starts(staff) -> None:  # type: ignore[no-untyped-def]
    from simulator.experiments.published import study

    # the published study's model: windows x configurations x measured seconds each, over the worker processes
    full = study.estimate({**study.EXPERIMENT.defaults})
    quick = study.estimate({**study.EXPERIMENT.defaults, "quick": True})
    assert quick.seconds < full.seconds
    assert study.estimate({**study.EXPERIMENT.defaults, "seeds": 20}).seconds == pytest.approx(2 * full.seconds)
    assert study.estimate({**study.EXPERIMENT.defaults, "workers": 2}).seconds == pytest.approx(full.seconds / 2)
    # no more workers than windows: one window cannot be split
    one = {**study.EXPERIMENT.defaults, "traces": ["fb2009"], "seeds": 1}
    assert study.estimate({**one, "workers": 8}).seconds == pytest.approx(study.estimate(one).seconds)
    # the 30 quick windows of 16 configurations on 2 processes: the 6.1 min it was measured at
    measured = study.estimate({**study.EXPERIMENT.defaults, "quick": True, "workers": 2})
    assert measured.seconds == pytest.approx(6.1 * 60)
    # and the Experiments page says it, with its basis, before anyone presses Run
    ops = Client()
    ops.force_login(staff)
    page = ops.get(reverse("lab")).content.decode()
    card = page[page.index('id="exp-published_schedulers"'):]
    assert "Estimated wall time:" in card[:card.index("</section>")] and "configurations" in card[:card.index("</section>")]
