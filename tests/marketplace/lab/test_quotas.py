"""Per-tenant lab quotas and fair queueing, as the attacks went: five 15.5 MB uploads kept for good,
one tenant queueing 192 runs, and another tenant's study put behind 190 of them.

The broker is a recorder here (``services.runs.publish_task``): what it receives, in order, is the
simulation queue's order, first in first out; nothing runs unless a test runs it.
"""

from __future__ import annotations

import io
import os
from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse

from marketplace.celery import app
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.services import runs
from marketplace.lab.services.experiments import experiment_requeue
from marketplace.lab.services.quotas import upload_bytes_kept
from marketplace.lab.services.simulations import simulation_cancel, simulation_execute, simulation_start
from simulator.whatif.run import FB2009
from tests.factories import TenantFactory

WORKLOAD = {"trace": str(FB2009), "trace_format": "auto", "start_hour": 0.0, "hours": 0.25, "time_scale": 1.0,
            "tenants": 2, "groups": 1, "max_jobs": 20, "workload_seed": 0}  # fmt: skip
BASE = {"mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30.0}
LINE = b"job1\t10\t1\t67108864\t0\t0\n"


@pytest.fixture
def broker(settings, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """A broker that records each (task, id) it is handed and runs nothing."""
    settings.EXPERIMENTS_IN_THREAD = False
    settings.SIMULATION_UPLOAD_DIR = tmp_path / "uploads"
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(runs, "publish_task", lambda task, pk: sent.append((task, pk)) or True)
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield sent
    app.conf.task_always_eager = eager


@pytest.fixture
def alice(market):  # type: ignore[no-untyped-def]
    return TenantFactory(market=market, username="lab-alice", deposit=Decimal("10")).user


@pytest.fixture
def bob(market):  # type: ignore[no-untyped-def]
    return TenantFactory(market=market, username="lab-bob", deposit=Decimal("10")).user


def _form(upload: bytes | None = None, **changes: Any) -> dict[str, Any]:
    form = {"title": "q", "trace": "fb2009", "trace_format": "auto", "start_hour": 0, "hours": 0.25, "time_scale": 1, "tenants": 2,
            "groups": 1, "max_jobs": 20, "capacity": "20, 10", "mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride",
            "alpha": 0.5, "t_wait": 30, "vary": "", "values": "", "seeds": "0"}  # fmt: skip
    if upload is not None:
        file = io.BytesIO(upload)
        file.name = "big.tsv"
        form |= {"trace": "upload", "upload": file}
    return form | changes


def _files() -> list[str]:
    folder = django_settings.SIMULATION_UPLOAD_DIR
    return sorted(os.listdir(folder)) if folder.exists() else []


def _start(user: Any, capture: Any, seeds: int, title: str = "t") -> SimulationStudy:
    with capture(execute=True):
        return simulation_start(title=title, workload=WORKLOAD, capacity=[20, 10], base=BASE, seeds=list(range(seeds)), user=user)


def test_five_large_uploads_stop_at_the_storage_quota_and_an_ended_study_frees_it(broker, alice, django_capture_on_commit_callbacks):
    # given a tenant on the study form and the default quota (64 MB of kept uploads)
    client = Client()
    client.force_login(alice)
    big = LINE * int(15.5 * 2**20 / len(LINE))  # 15.5 MB, under the 16 MB per-file limit
    # when it uploads five 15.5 MB traces in a row
    answers = []
    for _ in range(5):
        with django_capture_on_commit_callbacks(execute=True):
            answers.append(client.post(reverse("sim"), _form(big)))
    # then four are kept and the fifth is refused on the upload field, with nothing stored
    assert [r.status_code for r in answers] == [302, 302, 302, 302, 400]
    assert "Storage quota" in answers[-1].context["form"].errors["upload"][0]
    assert b"Storage quota" in answers[-1].content
    assert len(_files()) == 4 and SimulationStudy.objects.count() == 4
    assert upload_bytes_kept(user_id=alice.pk) <= django_settings.LAB_QUOTA_UPLOAD_BYTES
    # when one of its studies ends (cancelled), its upload is deleted and the next upload fits
    simulation_cancel(study_id=SimulationStudy.objects.order_by("pk").first().pk, user=alice)
    assert len(_files()) == 3
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(reverse("sim"), _form(big)).status_code == 302
    assert len(_files()) == 4


def test_a_tenant_cannot_queue_192_runs(broker, alice, django_capture_on_commit_callbacks):
    # given a tenant and the default run quota (128 queued or running)
    client = Client()
    client.force_login(alice)
    full = _form(vary="alpha", values=", ".join(str(v / 10) for v in range(1, 9)), seeds="0, 1, 2, 3, 4, 5, 6, 7")  # 64 runs
    # when it starts three studies of 64 runs in a row
    answers = []
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            answers.append(client.post(reverse("sim"), full))
    # then the third is refused on the swept values' field, and 128 runs are queued, not 192
    assert [r.status_code for r in answers] == [302, 302, 400]
    assert "Run quota: you have 128 runs queued or running" in answers[-1].context["form"].errors["values"][0]
    assert ExperimentRun.objects.filter(created_by=alice, status="queued").count() == 128


def test_staff_are_not_held_to_the_tenant_quotas(broker, staff, settings, django_capture_on_commit_callbacks):
    settings.LAB_QUOTA_RUNS = 2
    study = _start(staff, django_capture_on_commit_callbacks, seeds=3)
    assert ExperimentRun.objects.filter(study=study).count() == 3


def test_another_tenants_study_waits_behind_at_most_the_window_not_behind_190(broker, alice, bob, settings,
                                                                              django_capture_on_commit_callbacks):  # fmt: skip
    k = settings.LAB_DISPATCH_PER_TENANT
    # given a tenant that queued two studies of 64 runs
    for title in ("a1", "a2"):
        _start(alice, django_capture_on_commit_callbacks, seeds=64, title=title)
    # when another tenant starts a study of three runs
    study = _start(bob, django_capture_on_commit_callbacks, seeds=3, title="b")
    # then the first tenant has k runs with the broker, the rest wait in the database, saying why
    sent = [pk for _, pk in broker]
    owner = dict(ExperimentRun.objects.values_list("pk", "created_by_id"))
    assert sum(owner[pk] == alice.pk for pk in sent) == k
    waiting = ExperimentRun.objects.filter(created_by=alice, status="queued", enqueued_at__isnull=True)
    assert waiting.count() == 128 - k
    assert set(waiting.values_list("message", flat=True)) == {f"waiting: at most {k} runs per tenant go to the workers at once"}
    # and the newcomer's runs are all published, its first behind at most k runs (was: behind all 128)
    bobs = list(ExperimentRun.objects.filter(study=study).order_by("pk").values_list("pk", flat=True))
    assert set(bobs) <= set(sent)
    assert sent.index(bobs[0]) <= k
    # when a worker runs one of the first tenant's runs to its end
    first = next(pk for pk in sent if owner[pk] == alice.pk)
    assert simulation_execute(run_id=first) == "done"
    # then exactly one more of its runs is published (its window refilled), and the sweeper adds none
    assert sum(owner[pk] == alice.pk for _, pk in broker) == k + 1
    experiment_requeue(grace_s=0.0)
    assert sum(owner[pk] == alice.pk for _, pk in broker) == k + 1
    flying = ExperimentRun.objects.filter(created_by=alice, status="queued", enqueued_at__isnull=False).count()
    assert flying == k


def test_without_a_broker_nothing_waits(alice, settings, django_capture_on_commit_callbacks):
    # eager Celery runs each run at commit, in this process: there is no queue to share
    settings.EXPERIMENTS_IN_THREAD = False
    study = _start(alice, django_capture_on_commit_callbacks, seeds=6)
    assert set(ExperimentRun.objects.filter(study=study).values_list("status", flat=True)) == {"done"}
