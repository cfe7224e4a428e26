"""The lab's default study shows its configurations apart. Its defaults put the
swept alpha where it matters (FB-2009's busy hours on the demo market's 40 + 20 slots; at about
10 % utilisation the three alphas gave identical results), its tables and charts name the
resource types (map, reduce, not type 0/1), format numbers for people, and its axes make room
for their titles."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from marketplace.lab.charts import comparison_figures
from marketplace.lab.forms import StudyForm
from marketplace.lab.models import ExperimentRun, SimulationStudy


@pytest.fixture(autouse=True)
def _inline(settings):  # type: ignore[no-untyped-def]
    settings.EXPERIMENTS_IN_THREAD = False


def _defaults() -> dict[str, Any]:
    form = StudyForm()
    return {name: field.initial for name, field in form.fields.items() if field.initial is not None} | {"trace": "fb2009"}


def test_the_default_study_separates_its_configurations(staff, django_capture_on_commit_callbacks):
    post = _defaults() | {"seeds": "0"}  # the defaults, one seed (the test's time)
    assert post["vary"] == "alpha" and post["values"] == "0.2, 0.5, 0.8"
    client = Client()
    client.force_login(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("sim"), post)
    assert response.status_code == 302, response.content[:500]
    study = SimulationStudy.objects.get()
    runs = list(ExperimentRun.objects.filter(study=study).order_by("pk"))
    assert [r.status for r in runs] == ["done"] * 3
    responses = [r.result["metrics"]["mean_response_s"] for r in runs]
    assert len({round(x, 1) for x in responses}) == 3, responses  # the swept parameter matters here
    assert max(responses) / min(responses) > 1.02
    utilisation = max(runs[0].result["metrics"]["mean_utilisation"])
    assert utilisation > 0.3  # a contended cluster, not ~10 %
    study.refresh_from_db()
    columns = study.summary["columns"]
    assert "utilisation map" in columns and "utilisation reduce" in columns and not any("type 0" in c for c in columns)
    cells = [str(c) for row in study.summary["rows"] for c in row]
    assert not any(re.search(r"\de[+-]\d", c) for c in cells), cells
    html = client.get(response["Location"]).content.decode()
    assert "Utilisation, map" in html and "Clearing price, reduce" in html and "type 0" not in html


def test_axes_make_room_for_their_titles():
    result = {"series": {"t": [0.0, 1.0], "utilisation": [[0.1, 0.2], [0.3, 0.4]], "running_jobs": [1, 2], "queued_jobs": [0, 1],
                         "revenue": [0, 1], "loss": [0, 0], "rho": {}},
              "prices": {"t": [[0.0], [0.0]], "price": [[1.0], [2.0]]},
              "jobs": {"response_s": [1.0, 2.0], "finish_s": [1.0, 2.0], "value": [1, 1], "deadline_met": [True, True]}}
    figures = comparison_figures([("alpha=0.2", result)], type_names=["map", "reduce"])
    for figure in [f for group in figures.values() for f in group]:
        layout = figure["layout"]
        assert layout["xaxis"]["automargin"] and layout["yaxis"]["automargin"], layout["title"]
    assert figures["system"][0]["layout"]["title"]["text"] == "Utilisation, map"
