"""An upload is only stored by the request (with
a decompressed-size cap) and read by a worker within line and time limits, the study page shows
the outcome; non-finite values are refused with their line; refused files leave nothing on disk
and orphans are swept; one stated upload limit, shown on the page; no server path in study.json
or on the study pages."""

from __future__ import annotations

import gzip
import io
import json
import os
import time
from typing import Any
from unittest import mock

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse

from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.services.uploads import upload_sweep

GOOD = "".join(f"job{k}\t{10 * k}\t1\t{64 * 2**20}\t0\t0\n" for k in range(20)).encode()


@pytest.fixture(autouse=True)
def _inline(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.EXPERIMENTS_IN_THREAD = False  # eager Celery: the check and the runs run at commit, in this thread
    settings.SIMULATION_UPLOAD_DIR = tmp_path / "uploads"


class _Committing(Client):
    """A client whose requests' on-commit work (the check task, then the runs) runs, as after a real commit."""

    capture: Any = None

    def post(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        with self.capture(execute=True):
            return super().post(*args, **kwargs)


@pytest.fixture
def client(staff, django_capture_on_commit_callbacks) -> Client:  # type: ignore[no-untyped-def]
    c = _Committing()
    c.capture = django_capture_on_commit_callbacks
    c.force_login(staff)
    return c


def _form(content: bytes, name: str = "mine.tsv", **changes: Any) -> dict[str, Any]:
    upload = io.BytesIO(content)
    upload.name = name
    return {"title": "u", "trace": "upload", "upload": upload, "trace_format": "auto", "start_hour": 0, "hours": 1,
            "time_scale": 1, "tenants": 2, "groups": 1, "max_jobs": 0, "capacity": "10, 5", "mechanism": "abacus",
            "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30, "vary": "", "values": "",
            "seeds": "0"} | changes  # fmt: skip


def _files() -> list[str]:
    folder = django_settings.SIMULATION_UPLOAD_DIR
    return sorted(os.listdir(folder)) if folder.exists() else []


def test_the_request_only_stores_the_upload_and_a_worker_reads_it(client, django_capture_on_commit_callbacks):
    with mock.patch("simulator.whatif.run.load_swim", side_effect=AssertionError("parsed in the request")), \
            django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = Client.post(client, reverse("sim"), _form(gzip.compress(GOOD), "mine.tsv.gz"))
    assert response.status_code == 302
    study = SimulationStudy.objects.get()
    assert study.check_status == "checking" and len(_files()) == 1
    assert set(ExperimentRun.objects.values_list("enqueued_at", flat=True)) == {None}  # the runs wait for the check
    assert b"A simulation worker is reading the file" in client.get(response["Location"]).content
    for callback in callbacks:  # the commit: the check task (eager), then the runs
        callback()
    study.refresh_from_db()
    assert study.check_status == "passed", study.check_message
    assert set(ExperimentRun.objects.values_list("status", flat=True)) == {"done"}


def test_a_gzip_bomb_is_refused_while_it_is_stored(client, settings):
    settings.SIMULATION_UPLOAD_MAX_DECOMPRESSED_BYTES = 2**20
    bomb = gzip.compress(b"0" * (8 * 2**20))  # 8 MB of zeros in ~8 kB
    response = client.post(reverse("sim"), _form(bomb, "bomb.tsv.gz"))
    assert response.status_code == 400
    assert b"decompresses to more than 1 MB" in response.content
    assert not SimulationStudy.objects.exists() and _files() == []


def test_the_worker_stops_at_the_line_limit(client, settings):
    settings.SIMULATION_UPLOAD_MAX_LINES = 10
    response = client.post(reverse("sim"), _form(GOOD))
    study = SimulationStudy.objects.get()
    assert study.check_status == "refused" and "more than 10 lines" in study.check_message
    assert b"more than 10 lines" in client.get(response["Location"]).content
    assert _files() == []


@pytest.mark.parametrize("value", [b"inf", b"nan", b"1e308"])
def test_a_non_finite_value_is_refused_with_its_line_not_a_500(client, value):
    content = GOOD + b"job99\t300\t1\t" + value + b"\t0\t0\n"
    response = client.post(reverse("sim"), _form(content))
    assert response.status_code == 302
    page = client.get(response["Location"])
    assert page.status_code == 200
    study = SimulationStudy.objects.get()
    assert study.check_status == "refused" and "mine.tsv:21:" in study.check_message
    assert b":21: input bytes is" in page.content


def test_an_upload_refused_by_the_study_leaves_no_file(client):
    response = client.post(reverse("sim"), _form(GOOD, vary="fairshare", values="nope"))
    assert response.status_code == 400 and _files() == []
    response = client.post(reverse("sim"), _form(GOOD, capacity="10"))  # refused by the worker: one type too few
    assert SimulationStudy.objects.get().check_status == "refused" and _files() == []


def test_orphaned_uploads_are_swept_and_named_ones_kept(client):
    client.post(reverse("sim"), _form(GOOD))
    kept = _files()
    folder = django_settings.SIMULATION_UPLOAD_DIR
    orphan = folder / "0123456789abcdef.tsv"
    orphan.write_bytes(GOOD)
    young = folder / "fedcba9876543210.tsv"
    young.write_bytes(GOOD)
    old = time.time() - 7200
    for path in [orphan, *(folder / name for name in kept)]:
        os.utime(path, (old, old))
    assert upload_sweep() == 1
    assert _files() == sorted([*kept, young.name])


def test_one_stated_upload_limit_and_its_error_on_the_page(client, settings):
    settings.SIMULATION_UPLOAD_MAX_BYTES = 512 * 1024
    page = client.get(reverse("sim")).content.decode()
    assert "at most 0.5 MB as sent" in page and "50 MB" not in page
    assert 280_000 < len(GOOD * 600) < 512 * 1024
    ok = client.post(reverse("sim"), _form(GOOD * 600))  # ~300 kB: under the stated limit, not a raw 413
    assert ok.status_code == 302, ok.content[:300]
    big = client.post(reverse("sim"), _form(GOOD * 2000))  # ~1.2 MB
    assert big.status_code == 413 and big["Content-Type"].startswith("text/html")
    assert b"larger than at most 0.5 MB as sent" in big.content and b'id="upload-err"' in big.content


def test_no_server_path_in_study_json_or_the_study_pages(client, staff, django_capture_on_commit_callbacks):
    response = client.post(reverse("sim"), _form(GOOD))
    study = SimulationStudy.objects.get()
    run = ExperimentRun.objects.filter(study=study).first()
    bodies = [client.get(response["Location"]).content, client.get(reverse("sim-study-json", args=[study.pk])).content,
              client.get(reverse("lab-run", args=[run.pk])).content, client.get(reverse("sim")).content]
    for body in bodies:
        text = body.decode()
        assert str(django_settings.BASE_DIR) not in text and str(django_settings.SIMULATION_UPLOAD_DIR) not in text
    # the run's own result download too (the finding: result.json showed the upload's absolute path to any login)
    run.refresh_from_db()
    assert run.status == "done", run.status
    raw = json.dumps(run.result)
    assert str(django_settings.SIMULATION_UPLOAD_DIR) in raw  # what is stored names the file where it lies ...
    download = client.get(reverse("lab-run-json", args=[run.pk])).content.decode()
    assert str(django_settings.SIMULATION_UPLOAD_DIR) not in download and str(django_settings.BASE_DIR) not in download
    assert json.loads(download).keys() == run.result.keys()  # ... the download names only the file
    doc = json.loads(bodies[1])
    assert doc["study"]["trace_name"] == "upload mine.tsv"
    assert "upload mine.tsv" in bodies[0].decode()


def test_a_second_gzip_member_counts_towards_the_decompressed_limit(client, settings):
    # the attack: gzip(one valid line) + gzip(1 GiB of "a"); only the first member was counted
    settings.SIMULATION_UPLOAD_MAX_DECOMPRESSED_BYTES = 2**20
    two = gzip.compress(GOOD.splitlines(keepends=True)[0]) + gzip.compress(b"a" * (8 * 2**20))
    response = client.post(reverse("sim"), _form(two, "two.tsv.gz"))
    assert response.status_code == 400 and b"decompresses to more than 1 MB" in response.content
    assert not SimulationStudy.objects.exists() and _files() == []


def test_the_worker_reads_every_member_within_the_byte_and_line_length_limits(tmp_path):
    from simulator.workloads.traces import TraceLimits, load_swim

    # two members, each a valid part of the trace: both are read
    lines = GOOD.splitlines(keepends=True)
    path = tmp_path / "two.tsv.gz"
    path.write_bytes(gzip.compress(b"".join(lines[:2])) + gzip.compress(b"".join(lines[2:])))
    assert len(load_swim(path, limits=TraceLimits(max_lines=10**6, max_seconds=60))) == len(load_swim(path))
    # one line of 1 MB (no newline) is refused by the line-length cap, checked per chunk
    long_line = tmp_path / "long.tsv.gz"
    long_line.write_bytes(gzip.compress(lines[0]) + gzip.compress(b"a" * 2**20))
    with pytest.raises(ValueError, match="longer than"):
        load_swim(long_line, limits=TraceLimits(max_lines=10**6, max_seconds=60, max_line_bytes=4096))
    # and the decompressed total is capped however the lines are cut
    many = tmp_path / "many.tsv.gz"
    many.write_bytes(gzip.compress(lines[0] * 20000))
    with pytest.raises(ValueError, match="MB once decompressed"):
        load_swim(many, limits=TraceLimits(max_lines=10**9, max_seconds=60, max_bytes=2**16))


def test_an_upload_over_every_limit_gets_the_form_s_message_not_the_api_s(client, settings):
    # the finding: a 17 MB+ body was refused before routing, with raw JSON naming the API's 262,144 bytes
    settings.SIMULATION_UPLOAD_MAX_BYTES = 512 * 1024
    huge = 40 * 2**20  # over every view's limit: refused unread (only the header says how big)
    answer = client.post(reverse("sim"), data=b"x", content_type="application/octet-stream", CONTENT_LENGTH=str(huge))
    assert answer.status_code == 413 and answer["Content-Type"].startswith("text/html")
    assert b"(40.0 MB) is larger than at most 0.5 MB as sent" in answer.content and b"262144" not in answer.content
    # an API path over every limit still gets the API's JSON answer
    api = client.post("/api/jobs/", data=b"x", content_type="application/json", CONTENT_LENGTH=str(huge))
    assert api.status_code == 413 and api.json()["body"][0].endswith(f"limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.")
