"""Why a job waits (page and API), the fair-share table, and the T_wait explorer.

Given a live market that has cleared and run: a job that cannot start (the map
slots are busy with older jobs) is explained on its page and through the API;
the estimated start is where the same engine, run forward, starts it.
"""

from __future__ import annotations

import math

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.fairshare.selectors import job_waiting
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.web import charts


def _submit(tenant: Tenant, name: str) -> Job:
    return bid_submit(tenant=tenant, budget="50", name=name, work=[WorkItem("map", 40, 300.0), WorkItem("reduce", 5, 60.0)])


@pytest.fixture
def busy_market(market: Market, alice: Tenant, bob: Tenant) -> tuple[Market, Job]:
    """Alice and Bob's big jobs hold the map slots; Alice's third job waits behind her first."""
    _submit(alice, "alice-etl")
    _submit(bob, "bob-ml")
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=600)
    waiting = _submit(alice, "alice-late")
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=1)
    market.refresh_from_db()
    return market, waiting


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def test_waiting_job_is_explained_on_its_page(busy_market, alice) -> None:  # type: ignore[no-untyped-def]
    _, job = busy_market
    job.refresh_from_db()
    assert job.work.get(resource_type__name="map").pending > 0  # given: it really waits
    body = _client(alice.user).get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "Why is this job waiting?" in body and "Estimated start" in body
    assert "alice-etl" in body  # the older job of the same queue is ahead of it


def test_waiting_api_gives_position_ahead_and_an_estimate(busy_market, alice) -> None:  # type: ignore[no-untyped-def]
    market, job = busy_market
    api = APIClient()
    api.force_authenticate(alice.user)
    data = api.get(reverse("api-job-waiting", args=[job.pk])).json()
    assert data["waiting"] is True and data["known"] is True
    maps = next(r for r in data["resources"] if r["resource"] == "map")
    assert maps["position"] == 2 and [j["name"] for j in maps["jobs_ahead"]] == ["alice-etl"]
    assert maps["budget_ahead"] == pytest.approx(50.0)
    assert maps["t_wait"] == market.t_wait and maps["reasons"]
    # the estimate is where the live engine, run on with no other arrival, starts the job
    estimate = data["estimated_start"]
    assert estimate is not None and estimate > data["now"]
    while Job.objects.get(pk=job.pk).sim_start_time is None:
        cluster_advance(market_id=market.pk, seconds=60)
    assert Job.objects.get(pk=job.pk).sim_start_time == pytest.approx(estimate)


def test_waiting_api_hides_other_tenants_jobs_and_says_when_not_waiting(busy_market, alice, bob) -> None:  # type: ignore[no-untyped-def]
    _, job = busy_market
    api = APIClient()
    api.force_authenticate(bob.user)
    assert api.get(reverse("api-job-waiting", args=[job.pk])).status_code == 404
    running = Job.objects.get(name="bob-ml")
    assert api.get(reverse("api-job-waiting", args=[running.pk])).json()["waiting"] in (True, False)


def test_a_job_the_clock_has_not_seen_says_so(busy_market, alice) -> None:  # type: ignore[no-untyped-def]
    fresh = _submit(alice, "fresh")
    out = job_waiting(job=fresh)
    assert out is not None and out["known"] is False and "next tick" in out["message"]


def test_fairshare_table_page_and_api(busy_market, alice) -> None:  # type: ignore[no-untyped-def]
    _ = busy_market
    api = APIClient()
    api.force_authenticate(alice.user)
    table = api.get(reverse("api-fairshare")).json()
    maps = next(t for t in table["types"] if t["resource"] == "map")
    rows = {r["queue"]: r for r in maps["rows"]}
    leaves = [r for r in maps["rows"] if r["leaf"]]
    assert rows["root"]["running"] == sum(r["running"] for r in leaves) <= maps["capacity"]
    assert rows["root"]["share"] == pytest.approx(maps["capacity"])
    assert sum(r["fraction"] for r in leaves) == pytest.approx(1.0)
    assert rows["root"]["measured"] == pytest.approx(sum(r["measured"] for r in leaves))
    page = _client(alice.user).get(reverse("fairshare")).content.decode()
    assert "root.orga.analytics" in page and "(yours)" in page and "Fairness degree now" in page


@pytest.fixture
def staff(market: Market) -> Client:
    return _client(get_user_model().objects.create_superuser("root", "root@localhost", "pw-for-tests-1"))


@pytest.mark.parametrize("t_wait", ["0", "60", "120", "300", "off"])
def test_twait_explorer_runs_the_starvation_example(staff, market, t_wait) -> None:  # type: ignore[no-untyped-def]
    resp = staff.get(reverse("twait-explorer"), {"t_wait": t_wait})
    assert resp.status_code == 200
    data = resp.json()
    charts.validated(data["figure"])
    slot = data["t_task"]
    mine = next(iter(data["first_wait"]))
    naive = data["first_wait"]["naive hierarchy (T_wait off)"]
    assert naive is not None and naive >= 8 * slot  # the paper: B starves at least |(210-110)/12| = 8 slots
    if t_wait != "off":
        assert data["first_wait"][mine] <= float(t_wait) + slot  # H-LTRF: at most T_wait plus one slot
        assert data["max_gap"][mine] <= float(t_wait) + slot
    assert any("Eq. 7" in s for s in data["text"])


@pytest.mark.parametrize(("t_wait", "message"), [("1e309", "not a finite"), ("-5", "negative"), ("x", "not a number")])
def test_twait_explorer_explains_bad_values(staff, market, t_wait, message) -> None:  # type: ignore[no-untyped-def]
    resp = staff.get(reverse("twait-explorer"), {"t_wait": t_wait})
    assert resp.status_code == 400 and message in resp.json()["errors"]["t_wait"][0]


def test_twait_explorer_is_staff_only(market, alice) -> None:  # type: ignore[no-untyped-def]
    assert _client(alice.user).get(reverse("twait-explorer"), {"t_wait": "30"}).status_code == 403


def test_settings_page_carries_the_explorer(staff, market) -> None:  # type: ignore[no-untyped-def]
    body = staff.get(reverse("market-settings")).content.decode()
    assert 'id="twait-explorer"' in body and "twait_explorer.js" in body
    assert math.isfinite(market.t_wait)


def test_a_waiting_job_names_only_its_own_tenants_jobs_ahead(busy_market, alice) -> None:  # type: ignore[no-untyped-def]
    # given carol, in alice's leaf queue, whose job waits behind alice's older job
    from tests.factories import TenantFactory, leaf

    market, _ = busy_market
    carol = TenantFactory(market=market, username="carol", queue=leaf(market, "root.orga.analytics"))
    job = _submit(carol, "carol-job")
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=1)
    api = APIClient()
    api.force_authenticate(carol.user)
    # when she asks why it waits
    data = api.get(reverse("api-job-waiting", args=[job.pk])).json()
    maps = next(r for r in data["resources"] if r["resource"] == "map")
    # then the jobs ahead are counted and summed, but alice's are neither named nor priced
    assert maps["jobs_ahead"] and all(j == {"id": None, "name": "another tenant's job", "budget": None} for j in maps["jobs_ahead"])
    assert maps["budget_ahead"] == pytest.approx(50.0 * len(maps["jobs_ahead"]))
    page = _client(carol.user).get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "alice" not in str(data) and "alice-etl" not in page and "another tenant" in page
