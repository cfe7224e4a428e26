"""Lab studies on synthetic workloads, VM pools and the duration predictor: a study runs a
generator like a trace, keeps welfare and deadline flags in its table and exports, and
refuses bad generator or pool parameters by field before any run exists."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.services import simulations as svc
from simulator.whatif.run import FB2009
from simulator.workloads.synthetic import GeneratorSpec, generate

ERA = {"trace": str(FB2009), "trace_format": "auto", "start_hour": 0.0, "hours": 1.0, "time_scale": 1.0, "tenants": 3, "groups": 1,
       "max_jobs": 0, "workload_seed": 5, "generator": "era_classes"}  # fmt: skip
BASE = {"mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30.0}


@pytest.fixture(autouse=True)
def _inline(settings):  # type: ignore[no-untyped-def]
    settings.EXPERIMENTS_IN_THREAD = False


def _start(user: Any, capture: Any, **kw: Any) -> SimulationStudy:
    args = {"title": "t", "workload": ERA, "capacity": [24], "base": BASE, "vary": "", "values": [], "seeds": [0]} | kw
    with capture(execute=True):
        return svc.simulation_start(**args, user=user)


def test_a_generated_workload_runs_as_a_study_with_welfare_and_deadline_flags(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    # given an ERA job-class study on VM pools, sweeping the duration predictor
    study = _start(staff, django_capture_on_commit_callbacks, vm_pools="c8:2, c4:2", vary="predictor", values=["exact", "none"])
    study.refresh_from_db()
    assert study.capacity == [8 * 2 + 4 * 2] and study.workload["vm_pools"] == "c8:2, c4:2"
    runs = list(ExperimentRun.objects.filter(study=study).order_by("pk"))
    assert [r.status for r in runs] == ["done", "done"], [r.error for r in runs]
    assert [r.params["predictor"] for r in runs] == ["exact", "none"]
    # then every generated job was replayed, with its own value, and welfare is the value of the jobs done in time
    gen = generate(GeneratorSpec("era_classes", hours=1.0, tenants=3, seed=5))
    jobs = runs[0].result["jobs"]
    assert jobs["job_id"] == [j.job_id for j in gen.jobs]
    met_value = sum(v for v, ok in zip(jobs["value"], jobs["deadline_met"], strict=True) if ok)
    assert runs[0].result["metrics"]["welfare"] == pytest.approx(met_value, abs=1e-3)
    assert runs[0].result["metrics"]["deadline_met_fraction"] == pytest.approx(sum(jobs["deadline_met"]) / len(gen.jobs), abs=1e-6)
    # and the table and the exports carry them
    titles = study.summary["columns"]
    assert "welfare (money)" in titles and "deadlines met (fraction)" in titles
    client = Client()
    client.force_login(staff)
    rows = list(csv.reader(io.StringIO(client.get(reverse("sim-run-jobs-csv", args=[runs[0].pk])).content.decode())))
    header = rows[0]
    assert header[-4:] == ["deadline_s", "deadline_met", "value", "utility"]
    flags = [r[header.index("deadline_met")] for r in rows[1:]]
    assert flags == [str(b) for b in jobs["deadline_met"]]
    page = client.get(reverse("sim-study", args=[study.pk])).content.decode()
    assert "Welfare, cumulative" in page


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"workload": ERA | {"generator": "poisson"}}, "generator"),
        ({"workload": ERA | {"rate_scale": -1.0}}, "rate_scale"),
        ({"workload": ERA | {"era_slack": 1.0}}, "era_slack"),
        ({"workload": ERA | {"deadline_factor": 0.5}}, "deadline_factor"),
        ({"vm_pools": "c3:2"}, "vm_pools"),
        ({"base": BASE | {"predictor": "crystal ball"}}, "predictor"),
        ({"capacity": [20, 10]}, "capacity"),  # ERA jobs have one resource type
    ],
)
def test_bad_generator_pool_or_predictor_parameters_are_refused_by_field(staff, django_capture_on_commit_callbacks, kw, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as err:
        _start(staff, django_capture_on_commit_callbacks, **kw)
    assert field in err.value.message_dict, err.value.message_dict
    assert not SimulationStudy.objects.exists() and not ExperimentRun.objects.exists()


def test_seeds_of_a_generated_study_are_replicas_of_the_workload(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    study = _start(staff, django_capture_on_commit_callbacks, vary="alpha", values=[0.2, 0.8], seeds=[0, 1])
    runs = {(r.params["alpha"], r.params["seed"]): r.result["jobs"] for r in ExperimentRun.objects.filter(study=study)}
    for seed in (0, 1):  # the same draws under every configuration (seed 0 + workload_seed 5, then 6)
        want = [j.job_id for j in generate(GeneratorSpec("era_classes", hours=1.0, tenants=3, seed=5 + seed)).jobs]
        assert runs[(0.2, seed)]["job_id"] == runs[(0.8, seed)]["job_id"] == want
        assert runs[(0.2, seed)]["value"] == runs[(0.8, seed)]["value"]
    assert runs[(0.2, 0)]["value"] != runs[(0.2, 1)]["value"]


def test_the_form_starts_a_table1_study(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(staff)
    form = {"title": "Table 1", "trace": "fb2009", "trace_format": "auto", "start_hour": 0, "hours": 0.25, "time_scale": 1,
            "tenants": 8, "groups": 1, "max_jobs": 0, "generator": "abacus_table1", "rate_scale": 1, "deadline_factor": 2,
            "capacity": "30, 10", "mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30,
            "predictor": "exact", "vary": "", "values": "", "seeds": "0"}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("sim"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    (run,) = ExperimentRun.objects.all()
    assert run.status == "done", run.error
    assert set(run.result["jobs"]["tenant"]) <= {"u0", "u1", "u2"} and run.params["deadline_factor"] == 2
