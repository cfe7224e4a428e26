"""The simulation lab: studies fan out one run per configuration and seed, gather a table,
refuse bad or oversized input before any run exists, cancel, export; a seeded run equals
the offline runner on the same input."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from marketplace.lab.files import summary_by_metric
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.services import runs
from marketplace.lab.services import simulations as svc
from scheduler.fairshare.fairness import QueueTree
from simulator.runner import MarketParams, run
from simulator.whatif.run import FB2009
from simulator.workloads.traces import load_swim

WORKLOAD = {"trace": str(FB2009), "trace_format": "auto", "start_hour": 0.0, "hours": 0.5, "time_scale": 1.0,
            "tenants": 4, "groups": 2, "max_jobs": 0, "workload_seed": 0}  # fmt: skip
BASE = {"mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30.0}


@pytest.fixture(autouse=True)
def _inline(settings):  # type: ignore[no-untyped-def]
    settings.EXPERIMENTS_IN_THREAD = False  # eager Celery runs the group's tasks at commit, in this thread


def _start(user: Any, capture: Any, *, execute: bool = True, **kw: Any) -> SimulationStudy:
    args = {"title": "t", "workload": WORKLOAD, "capacity": [20, 10], "base": BASE, "vary": "", "values": [], "seeds": [0]} | kw
    with capture(execute=execute):
        return svc.simulation_start(**args, user=user)


def test_a_seeded_run_equals_the_offline_runner_on_the_same_input(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    # given a one-configuration study on half an hour of FB-2009
    study = _start(staff, django_capture_on_commit_callbacks, seeds=[3])
    (r,) = ExperimentRun.objects.filter(study=study)
    assert r.status == "done", r.error
    # when the same jobs are replayed directly by the offline runner (built here, independently)
    jobs = load_swim(FB2009, hours=0.5, users=4, groups=2, seed=0)
    tree = QueueTree.from_paths({f"root.g{k % 2}.u{k}": 1.0 for k in range(4)})
    leaf = {n.rsplit(".", 1)[1]: i for i, n in enumerate(tree.leaf_names)}
    offline = run(jobs, tree=tree, leaf_of_user=leaf, capacity=[20, 10], params=MarketParams(alpha=0.5, t_wait=30.0, seed=3))
    # then the stored run is the offline run: every job's response and payment, the revenue
    recs = r.result["jobs"]
    by_id = {f.job_id: f.response_time for f in offline.finished}
    assert recs["job_id"] == [j.job_id for j in jobs]
    assert np.allclose([recs["response_s"][k] for k in range(len(jobs))], [by_id[j.job_id] for j in jobs], atol=1e-3)
    paid = sum(c.amount for c in offline.charges)
    assert r.result["metrics"]["revenue"] == pytest.approx(paid, rel=1e-6)
    assert r.result["metrics"]["finished"] == len(offline.finished)
    assert r.result["metrics"]["clearings"] == offline.clearings


def test_a_sweep_runs_every_value_and_seed_and_gathers_one_table(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    study = _start(staff, django_capture_on_commit_callbacks, vary="alpha", values=[0.2, 0.8], seeds=[0, 1])
    runs = list(ExperimentRun.objects.filter(study=study).order_by("pk"))
    assert [(r.label, r.params["seed"], r.params["alpha"]) for r in runs] == [
        ("alpha=0.2", 0, 0.2), ("alpha=0.2", 1, 0.2), ("alpha=0.8", 0, 0.8), ("alpha=0.8", 1, 0.8)]  # fmt: skip
    assert all(r.status == "done" for r in runs)
    study.refresh_from_db()
    table = study.summary
    assert [row[0] for row in table["rows"]] == ["alpha=0.2", "alpha=0.8"] and [row[1] for row in table["rows"]] == [2, 2]
    # the interval is the Student-t one over the two seeds' values
    from scipy import stats

    vals = [r.result["metrics"]["revenue"] for r in runs[:2]]  # budgets are drawn per seed
    mean, half, n = table["estimates"]["alpha=0.2"]["revenue (money)"]
    lo, hi = stats.t.interval(0.95, 1, loc=np.mean(vals), scale=stats.sem(vals))
    assert n == 2 and mean == pytest.approx(np.mean(vals)) and half == pytest.approx((hi - lo) / 2)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"capacity": [20]}, "capacity"),
        ({"workload": WORKLOAD | {"hours": -1.0}}, "hours"),
        ({"workload": WORKLOAD | {"trace": "/nonexistent.tsv"}}, "trace"),
        ({"vary": "fairshare", "values": ["nope"]}, "fairshare"),
        ({"vary": "colour", "values": [1]}, "vary"),
        ({"seeds": []}, "seeds"),
    ],
)
def test_bad_input_is_refused_field_by_field_before_any_run(staff, django_capture_on_commit_callbacks, kw, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as err:
        _start(staff, django_capture_on_commit_callbacks, **kw)
    assert field in err.value.message_dict
    assert not SimulationStudy.objects.exists() and not ExperimentRun.objects.exists()


def test_a_run_that_would_not_fit_in_memory_is_refused_before_it_starts(staff, settings, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    settings.SIMULATION_MEMORY_LIMIT_MB = 1
    with pytest.raises(ValidationError) as err:
        _start(staff, django_capture_on_commit_callbacks)
    assert "MB" in err.value.message_dict["__all__"][0] and not ExperimentRun.objects.exists()


def test_a_malformed_upload_shows_the_line_at_fault(staff, settings, tmp_path, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    settings.SIMULATION_UPLOAD_DIR = tmp_path
    client = Client()
    client.force_login(staff)
    bad = io.BytesIO(b"job0\t10\t0\t100\t0\t0\njob1\t20\toops\n")
    bad.name = "mine.tsv"
    form = {"title": "u", "trace": "upload", "upload": bad, "trace_format": "auto", "start_hour": 0, "hours": 1, "time_scale": 1,
            "tenants": 2, "groups": 1, "max_jobs": 0, "capacity": "10, 5", "mechanism": "abacus", "fairshare": "hltrf",
            "dispatch": "stride", "alpha": 0.5, "t_wait": 30, "vary": "", "values": "", "seeds": "0"}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("sim"), form)  # stored only; a worker (eager here) reads it
    assert response.status_code == 302
    study = SimulationStudy.objects.get()
    assert study.check_status == "refused" and ":2: expected 6 fields, got 3" in study.check_message
    page = client.get(response["Location"])
    assert b":2: expected 6 fields, got 3" in page.content
    assert set(ExperimentRun.objects.values_list("status", flat=True)) == {"failed"}
    assert not list(tmp_path.iterdir())  # the refused file is gone


def test_cancelling_a_queued_study_cancels_every_run_and_gathers(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    study = _start(staff, django_capture_on_commit_callbacks, execute=False, vary="t_wait", values=[0.0, 60.0])
    assert set(ExperimentRun.objects.filter(study=study).values_list("status", flat=True)) == {"queued"}
    assert svc.simulation_cancel(study_id=study.pk, user=staff) == 2
    assert set(ExperimentRun.objects.filter(study=study).values_list("status", flat=True)) == {"cancelled"}
    study.refresh_from_db()
    assert study.summary["rows"] == [] and study.summary["failed"] == ["t_wait=0.0", "t_wait=60.0"]


def test_the_study_page_compares_configurations_and_exports(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    study = _start(staff, django_capture_on_commit_callbacks, vary="fairshare", values=["fifo", "ltrf", "hltrf"])
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("sim-study", args=[study.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="summary-table"' in html and "fairshare=ltrf" in html
    # the page's table is the summary on its side: a column per configuration, a row per metric, the same cells
    study.refresh_from_db()
    table = summary_by_metric(study.summary)
    assert table["header"] == ["metric", *(r[0] for r in study.summary["rows"])]
    assert [r[0] for r in table["rows"]] == study.summary["columns"][1:]
    for k, row in enumerate(study.summary["rows"]):
        assert [r[k + 1] for r in table["rows"]] == row[1:]
    assert summary_by_metric({}) == {"header": [], "rows": []}
    assert html.index("System: load and latency") < html.index("Economic: prices and revenue")
    assert len(page.content) < 2 * 2**20
    rows = list(csv.reader(io.StringIO(client.get(reverse("sim-study-csv", args=[study.pk])).content.decode())))
    assert rows[0] == ["configuration", "metric", "mean", "ci95_half_width", "seeds"]
    assert {r[0] for r in rows[1:]} == {"fairshare=fifo", "fairshare=ltrf", "fairshare=hltrf"}
    body = json.loads(client.get(reverse("sim-study-json", args=[study.pk])).content)
    assert len(body["runs"]) == 3 and body["summary"]["rows"]
    run_id = body["runs"][0]["id"]
    jobs = list(csv.reader(io.StringIO(client.get(reverse("sim-run-jobs-csv", args=[run_id])).content.decode())))
    assert jobs[0][:3] == ["job_id", "tenant", "submit_s"] and len(jobs) - 1 == body["runs"][0]["metrics"]["jobs"]
    status = client.get(reverse("sim-study-status", args=[study.pk])).json()
    assert status["finished"] and [r["status"] for r in status["runs"]] == ["done"] * 3


def test_manage_py_simulate_writes_the_pages_files_with_the_same_numbers(staff, tmp_path, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    from django.core.management import call_command

    out = io.StringIO()
    call_command("simulate", "--hours", "0.5", "--tenants", "4", "--capacity", "20", "10", "--vary", "alpha", "--values", "0.2", "0.8",
                 "--seeds", "0", "--out", str(tmp_path), stdout=out)  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-1-jobs.csv", "run-2-jobs.csv", "study.json", "summary.csv"]
    study = _start(staff, django_capture_on_commit_callbacks, vary="alpha", values=[0.2, 0.8], seeds=[0])
    client = Client()
    client.force_login(staff)
    web_summary = client.get(reverse("sim-study-csv", args=[study.pk])).content.decode()
    assert (tmp_path / "summary.csv").read_bytes().decode() == web_summary
    first = ExperimentRun.objects.filter(study=study).order_by("pk").first()
    web_jobs = client.get(reverse("sim-run-jobs-csv", args=[first.pk])).content.decode()
    assert (tmp_path / "run-1-jobs.csv").read_bytes().decode() == web_jobs
    doc = json.loads((tmp_path / "study.json").read_text())
    assert [r["metrics"] for r in doc["runs"]] == [r.result["metrics"] for r in ExperimentRun.objects.filter(study=study).order_by("pk")]
    assert "alpha=0.2" in out.getvalue()


def test_manage_py_simulate_refuses_bad_input_with_the_field(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="capacity"):
        call_command("simulate", "--capacity", "20", "--out", str(tmp_path))


def test_the_run_task_is_acked_on_receipt_routed_to_its_queue_and_time_limited(settings) -> None:  # type: ignore[no-untyped-def]
    # a late ack would let Redis redeliver a run longer than the visibility timeout to a second worker
    from marketplace.celery import app
    from marketplace.lab.tasks import simulation_run_task

    assert simulation_run_task.acks_late is False and simulation_run_task.reject_on_worker_lost is False
    assert app.amqp.router.route({}, simulation_run_task.name)["queue"].name == runs.KINDS["simulation"].queue == "simulation"
    assert simulation_run_task.soft_time_limit == settings.SIMULATION_TIME_LIMIT_S < simulation_run_task.time_limit
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] < settings.SIMULATION_TIME_LIMIT_S
