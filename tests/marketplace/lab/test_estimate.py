"""A run's wall time before it starts, for the parameters in the form (``lab/estimate.json``, which the Experiments
page asks as the fields change): the published study's model scales with the windows (traces x seeds), the
configurations and the worker processes it is given; a field the run would refuse gives no estimate and names the
field; a run's page keeps the estimate it had until its own pace shows."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from marketplace.lab.models import ExperimentRun
from simulator.experiments.published.setup import LABELS


@pytest.fixture
def ops(staff) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(staff)
    return client


def _seconds(ops: Client, **fields: Any) -> float:
    query = {"name": "published_schedulers", "typed_form": "1", "p_quick": "on",
             **{f"p_{k}": v for k, v in fields.items()}}
    body = ops.get(reverse("lab-estimate"), query).json()
    assert body["errors"] == {} and body["estimate"] is not None, body
    return float(body["estimate"]["seconds"])


def test_the_estimate_scales_with_the_cells_configurations_and_workers(ops: Client) -> None:
    three = ["fb2009", "kth", "lcg"]
    base = _seconds(ops, traces=three, seeds="10", policies=list(LABELS), workers="1")
    # windows: twice the seeds, twice the time; one trace of three, a third
    assert _seconds(ops, traces=three, seeds="20", policies=list(LABELS), workers="1") == pytest.approx(2 * base, rel=1e-3)
    assert _seconds(ops, traces=["kth"], seeds="10", policies=list(LABELS), workers="1") == pytest.approx(base / 3, rel=1e-3)
    # configurations: H-LTRF and one other are 2 of 16
    assert _seconds(ops, traces=three, seeds="10", policies=["DRF"], workers="1") == pytest.approx(base * 2 / len(LABELS), rel=1e-3)
    # workers divide it, but never beyond one per window
    assert _seconds(ops, traces=three, seeds="10", policies=list(LABELS), workers="3") == pytest.approx(base / 3, rel=1e-3)
    one = _seconds(ops, traces=["lcg"], seeds="1", policies=list(LABELS), workers="1")
    assert _seconds(ops, traces=["lcg"], seeds="1", policies=list(LABELS), workers="4") == pytest.approx(one, rel=1e-3)
    # full windows cost more than quick ones
    body = ops.get(reverse("lab-estimate"), {"name": "published_schedulers", "typed_form": "1", "p_traces": three,
                                              "p_seeds": "10", "p_policies": list(LABELS), "p_workers": "1"}).json()
    assert body["estimate"]["seconds"] > base and "measured" in body["estimate"]["basis"]


def test_a_refused_field_gives_no_estimate_and_names_the_field(ops: Client) -> None:
    body = ops.get(reverse("lab-estimate"), {"name": "published_schedulers", "typed_form": "1", "p_seeds": "0",
                                              "p_traces": "fb2009", "p_policies": "DRF"}).json()
    assert "seeds" in body["errors"]
    assert ops.get(reverse("lab-estimate"), {"name": "nope"}).status_code == 404


def test_the_page_shows_the_posted_parameters_estimate_and_the_run_page_keeps_it(ops: Client, staff) -> None:  # type: ignore[no-untyped-def]
    page = ops.get(reverse("lab")).content.decode()
    card = page[page.index('id="exp-published_schedulers"'):]
    assert 'id="estimate-published_schedulers"' in card[:card.index("</section>")]
    run = ExperimentRun.objects.create(name="published_schedulers", created_by=staff,
                                       params={"traces": ["kth"], "seeds": 2, "quick": True, "workers": 1, "policies": ["DRF"],
                                               "cell": []})
    expected = ops.get(reverse("lab-estimate"), {"name": "published_schedulers", "typed_form": "1", "p_traces": "kth",
                                                  "p_seeds": "2", "p_quick": "on", "p_workers": "1", "p_policies": "DRF"}).json()
    html = ops.get(reverse("lab-run", args=[run.pk])).content.decode()
    assert f"estimated before it started: {expected['estimate']['text']} in all" in html


def test_a_refused_post_shows_no_estimate_beside_its_errors(ops: Client) -> None:
    # the page re-rendered after seeds=0 must not estimate the defaults "with the parameters below"
    response = ops.post(reverse("lab"), {"name": "published_schedulers", "typed_form": "1", "p_seeds": "0", "p_traces": "kth",
                                         "p_policies": "DRF", "p_workers": "1"})
    assert response.status_code == 400
    page = response.content.decode()
    box = page[page.index('id="estimate-published_schedulers"'):]
    box = " ".join(box[:box.index("</p>")].split())
    assert "no estimate</strong> with <span class=\"estimate-which\">a field to correct (seeds)" in box, box
