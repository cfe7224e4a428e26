"""The lab's default study shows its configurations apart, by more than their 95 % intervals. Its
defaults sweep the setting picked by the rule on the page (the dispatch inside a queue, FIFO against
stride) where it matters (FB-2009's busy hours on the demo market's 40 + 20 slots; at about 10 %
utilisation every configuration gives the same result), its tables and charts name the
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
    post = _defaults()  # the defaults as a new user gets them, all three seeds
    assert post["vary"] == "dispatch" and post["values"] == "fifo, stride" and post["seeds"] == "0, 1, 2"
    client = Client()
    client.force_login(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("sim"), post)
    assert response.status_code == 302, response.content[:500]
    study = SimulationStudy.objects.get()
    runs = list(ExperimentRun.objects.filter(study=study).order_by("pk"))
    assert [r.status for r in runs] == ["done"] * 6
    study.refresh_from_db()
    # the effect lies outside both configurations' 95 % intervals over the seeds: the study shows something
    (fifo, fifo_half, _), (stride, stride_half, _) = (study.summary["estimates"][label]["mean response (sim s)"]
                                                      for label in ("dispatch=fifo", "dispatch=stride"))
    assert abs(fifo - stride) > fifo_half + stride_half, (fifo, fifo_half, stride, stride_half)
    # the page states the rule with its date, and the outcome it reports is what the defaults give now
    index = client.get(reverse("sim")).content.decode()
    rule, outcome = (re.search(rf'id="{k}">(.*?)</p>', index, re.S)[1] for k in ("default-rule", "default-outcome"))  # type: ignore[index]
    assert "2026-11-28 before this study was run" in " ".join(rule.split())
    said = " ".join(outcome.split())
    assert f"{fifo:,.0f} s under FIFO against {stride:,.0f} ± {stride_half:.0f} s under stride" in said, said
    assert ("outside both intervals" in said) == (abs(fifo - stride) > fifo_half + stride_half)
    assert ("FIFO's is zero" in said) == (fifo_half == 0)
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
