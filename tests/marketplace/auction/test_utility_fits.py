"""Utility learning in the marketplace (paper 000, Sec. 5): completed jobs
store their average job resource, the tenant's page and API show the fit, and adopting it
sets the weights of new bids."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient
from scipy.optimize import lsq_linear  # type: ignore[import-untyped]

from marketplace.auction.models import AdoptedUtility, WorkItem
from marketplace.auction.services import bid_submit, utility_fit_adopt
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance

WORK = [WorkItem("map", 10, 60.0, 1.0), WorkItem("reduce", 2, 60.0, 1.0)]


def test_a_completed_job_stores_its_average_job_resource(market: Market, alice: Tenant) -> None:
    job = bid_submit(tenant=alice, budget="10", name="etl", work=WORK)
    for _ in range(10):
        market_clear(market_id=market.pk)
        cluster_advance(market_id=market.pk, seconds=600)
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED and job.job_class == "etl"
    # alone in its queue: share 1 on a type while it has work there, 0 after
    shares = job.average_shares
    assert set(shares) == {"map", "reduce"} and all(0 < v <= 1 for v in shares.values())


def _finished(tenant: Tenant, job_class: str, shares: dict[str, float], response: float) -> Job:
    job = Job.objects.create(market=tenant.market, tenant=tenant, queue_id=tenant.default_queue_id, name=job_class,
                             job_class=job_class, budget=10, status=Job.Status.FINISHED, sim_submit_time=100.0,
                             sim_finish_time=100.0 + response, average_shares=shares)
    return job


@pytest.fixture
def etl_history(alice: Tenant) -> list[tuple[dict[str, float], float]]:
    """Five finished 'etl' jobs whose speed follows 6 * map + 1 * reduce share, with noise."""
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(5):
        shares = {"map": float(rng.uniform(0.1, 0.9)), "reduce": float(rng.uniform(0.1, 0.9))}
        u = (6 * shares["map"] + shares["reduce"]) / 600.0 * float(rng.lognormal(0, 0.05))
        _finished(alice, "etl", shares, 1.0 / u)
        rows.append((shares, u))
    _finished(alice, "once", {"map": 0.5, "reduce": 0.5}, 100.0)  # one job: not enough for m = 2
    return rows


def test_page_and_api_show_the_fit_its_spread_and_k(alice: Tenant, alice_api: APIClient, etl_history) -> None:
    x = np.array([[s["map"], s["reduce"]] for s, _ in etl_history])
    oracle = lsq_linear(x, np.array([u for _, u in etl_history]), bounds=(0, np.inf), tol=1e-12).x
    fits = {f["job_class"]: f for f in alice_api.get("/api/utility-fits/").json()}
    etl = fits["etl"]
    assert etl["jobs"] == 5 and etl["jobs_needed"] == 2
    assert [etl["weights"]["map"], etl["weights"]["reduce"]] == pytest.approx(oracle, rel=1e-6)
    assert 3 < etl["weights"]["map"] / etl["weights"]["reduce"] < 12  # near the true ratio 6
    assert etl["spread"]["map"] > 0
    assert fits["once"]["weights"] is None and fits["once"]["jobs"] == 1
    client = Client()
    client.force_login(alice.user)
    page = client.get(reverse("utility-fits")).content.decode()
    assert "id=\"fit-jobs-" in page and "Adopt for new bids" in page and "id=\"waiting-classes\"" in page


def test_adopting_sets_the_weights_of_new_bids(market: Market, alice: Tenant, alice_api: APIClient, etl_history) -> None:
    resp = alice_api.post("/api/utility-fits/adopt/", {"job_class": "etl"}, format="json")
    assert resp.status_code == 201
    adopted = AdoptedUtility.objects.get(tenant=alice, job_class="etl")
    # a bid of the class asking for it gets the fitted weights, whatever was entered
    resp = alice_api.post("/api/jobs/", {"budget": "5", "name": "etl", "use_adopted_utility": True, "work": [
        {"resource_type": "map", "tasks": 4, "task_duration": 30.0, "weight": 1.0},
        {"resource_type": "reduce", "tasks": 1, "task_duration": 30.0, "weight": 1.0}]}, format="json")
    assert resp.status_code == 201, resp.json()
    weights = dict(JobWork.objects.filter(job_id=resp.json()["id"]).values_list("resource_type__name", "weight"))
    assert weights == pytest.approx(adopted.weights)


def test_adopting_without_enough_jobs_is_a_field_error(alice: Tenant, alice_api: APIClient, etl_history) -> None:
    with pytest.raises(ValidationError) as err:
        utility_fit_adopt(tenant=alice, job_class="once")
    assert "a fit needs at least 2" in str(err.value.message_dict["job_class"])
    resp = alice_api.post("/api/jobs/", {"budget": "5", "job_class": "never", "use_adopted_utility": True, "work": [
        {"resource_type": "map", "tasks": 1, "task_duration": 1.0}]}, format="json")
    assert resp.status_code == 400 and "use_adopted_utility" in resp.json()
    assert not AdoptedUtility.objects.exists()


def test_the_adopt_button_adopts_and_reports(alice: Tenant, etl_history) -> None:
    client = Client()
    client.force_login(alice.user)
    resp = client.post(reverse("utility-fit-adopt"), {"job_class": "etl"}, follow=True)
    assert "Adopted the fit of class" in resp.content.decode()
    assert AdoptedUtility.objects.filter(tenant=alice, job_class="etl", jobs=5).exists()
    resp = client.post(reverse("utility-fit-adopt"), {"job_class": "once"}, follow=True)
    assert "a fit needs at least 2" in resp.content.decode()


def test_the_preview_and_the_bid_read_the_adopted_fit_by_one_rule(alice: Tenant, alice_api: APIClient, etl_history) -> None:
    # the class is the job class, else the name, stripped: the preview and the bid find the same fit
    assert alice_api.post("/api/utility-fits/adopt/", {"job_class": "etl"}, format="json").status_code == 201
    body = {"budget": "5", "name": "  etl  ", "use_adopted_utility": True, "work": [
        {"resource_type": "map", "tasks": 4, "task_duration": 30.0, "weight": 1.0},
        {"resource_type": "reduce", "tasks": 1, "task_duration": 30.0, "weight": 1.0}]}
    preview = alice_api.post("/api/bids/preview/", body, format="json")
    assert preview.status_code == 200, preview.json()
    assert alice_api.post("/api/jobs/", body, format="json").status_code == 201
    # a class nobody adopted is refused by both, on the same field
    other = body | {"name": "never"}
    assert "use_adopted_utility" in alice_api.post("/api/bids/preview/", other, format="json").json()
    assert "use_adopted_utility" in alice_api.post("/api/jobs/", other, format="json").json()
