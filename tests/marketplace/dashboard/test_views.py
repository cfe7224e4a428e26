"""Web pages: rendering, the bid form's field errors, ownership, staff-only settings, CSV exports.

Actors (``market``, ``alice``, ``bob``) come from tests/marketplace/conftest.py and are
built through ``market_create`` and ``tenant_create``.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.ledger.models import LedgerEntry
from marketplace.market.models.allocation import FairnessSample, MarketSample
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.queues import Queue
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.web.shortcuts import MAX_POINTS, PAGE_SIZE

GOOD_BID = {
    "name": "wordcount", "budget": "100", "utility": "linear",
    "map_tasks": "8", "map_duration": "12.5", "map_weight": "1",
    "reduce_tasks": "2", "reduce_duration": "30", "reduce_weight": "2",
}


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def _submit(tenant: Tenant, budget: str = "50", name: str = "job") -> Job:
    """A job that keeps running for a while: 40 map tasks of 300 s on 10 map slots, then 5 reduce tasks."""
    return bid_submit(tenant=tenant, budget=budget, name=name, work=[WorkItem("map", 40, 300.0), WorkItem("reduce", 5, 60.0)])


@pytest.fixture(autouse=True)
def _fresh_cache():  # type: ignore[no-untyped-def]
    # The dashboard caches its payload by market id and clock; ids repeat across rolled-back tests.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def alice_client(alice: Tenant) -> Client:
    return _client(alice.user)


@pytest.fixture
def bob_client(bob: Tenant) -> Client:
    return _client(bob.user)


@pytest.fixture
def staff_client(market: Market) -> Client:
    return _client(get_user_model().objects.create_superuser("root", "root@localhost", "pw-for-tests-1"))


@pytest.fixture
def alice_job(alice: Tenant) -> Job:
    return _submit(alice, name="alice-etl")


@pytest.fixture
def running_market(market: Market, alice: Tenant, bob: Tenant, alice_job: Job) -> Market:
    """A market that has cleared and run for ten simulated minutes: shares, prices and samples exist."""
    _submit(bob, name="bob-ml")
    assert market_clear(market_id=market.pk).status == "cleared"
    cluster_advance(market_id=market.pk, seconds=600)
    market_clear(market_id=market.pk)
    market.refresh_from_db()
    return market


# --- Rendering --------------------------------------------------------------------------------

PAGES = {
    "dashboard": (lambda job: reverse("dashboard"), "Allocation and fairness"),
    "bid form": (lambda job: reverse("bid-new"), "Submit a bid"),
    "job list": (lambda job: reverse("job-list"), "alice-etl"),
    "job detail": (lambda job: reverse("job-detail", args=[job.pk]), "Share history"),
    "account": (lambda job: reverse("account"), "Ledger"),
}


@pytest.mark.parametrize("url,text", PAGES.values(), ids=PAGES.keys())
def test_page_renders_for_a_tenant(alice_client, running_market, alice_job, url, text):
    resp = alice_client.get(url(alice_job))
    assert resp.status_code == 200
    body = resp.content.decode()
    assert text in body
    assert 'id="sim-clock"' in body and "0:10:00" in body  # the simulated clock in the layout
    assert 'action="/logout/"' in body and 'method="post"' in body


@pytest.mark.parametrize("url,text", PAGES.values(), ids=PAGES.keys())
def test_page_renders_before_any_clearing(alice_client, alice_job, url, text):
    assert alice_client.get(url(alice_job)).status_code == 200


@pytest.mark.parametrize("name", ["dashboard", "bid-new", "job-list", "account", "market-settings", "job-list-csv", "ledger-csv"])
def test_pages_need_a_login(client, market, name):
    resp = client.get(reverse(name))
    assert resp.status_code == 302 and resp.url.startswith(reverse("login"))


def test_login_page_and_post_logout(client, alice):
    assert client.get(reverse("login")).status_code == 200
    resp = client.post(reverse("login"), {"username": "alice", "password": "pw-for-tests-1"})
    assert resp.status_code == 302 and resp.url == reverse("dashboard")
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("dashboard")).status_code == 302


def test_dashboard_shows_headline_numbers(alice_client, running_market):
    body = alice_client.get(reverse("dashboard")).content.decode()
    for element in ["jobs-queued", "jobs-running", "jobs-finished", "util-0", "util-1", "price-0", "clearing-rounds", "chart-alloc-0",
                    "chart-rho-1", "chart-jobs", "chart-util", "chart-sharing", "chart-prices"]:
        assert f'id="{element}"' in body
    assert "vendor/plotly/plotly-basic.min.js" in body and "cdn" not in body.lower()


def test_staff_without_tenant_sees_dashboard_but_not_tenant_pages(staff_client, running_market):
    assert staff_client.get(reverse("dashboard")).status_code == 200
    resp = staff_client.get(reverse("bid-new"))
    assert resp.status_code == 403 and b"not a tenant" in resp.content


# --- Dashboard data ---------------------------------------------------------------------------


def test_dashboard_data_has_figures_with_the_market_series(alice_client, running_market, alice_job):
    resp = alice_client.get(reverse("dashboard-data"))
    assert resp.status_code == 200
    data = resp.json()
    assert data["headline"]["text"]["sim-clock"] == "0:10:00"
    figures = data["figures"]
    assert set(figures) == {"alloc-0", "alloc-1", "rho-0", "rho-1", "jobs", "util", "sharing", "prices", "unit-prices"}
    alloc_names = {t["name"] for t in figures["alloc-0"]["data"]}
    assert {"root.orga.analytics", "root.orgb.research", "capacity"} <= alloc_names
    held = sum(sum(t["y"]) for t in figures["alloc-0"]["data"] if t["name"] != "capacity")
    assert held > 0  # units were held while the market ran
    assert {t["name"] for t in figures["util"]["data"]} == {"map", "reduce"}
    assert any(str(alice_job.pk) in t["name"] for t in figures["jobs"]["data"])
    assert figures["prices"]["data"] and figures["sharing"]["data"]


def test_dashboard_data_mine_shows_only_my_jobs(alice_client, running_market, alice_job, bob):
    figures = alice_client.get(reverse("dashboard-data"), {"jobs": "mine"}).json()["figures"]
    names = [t["name"] for t in figures["jobs"]["data"]]
    assert names and all(n.startswith(f"#{alice_job.pk} ") for n in names)


def test_job_share_traces_only_for_resource_types_with_tasks(alice_client, alice):
    alice_client.post(reverse("bid-new"), GOOD_BID | {"reduce_tasks": "0", "name": "maps-only"})
    job = Job.objects.get(name="maps-only")
    assert [w.resource_type.name for w in job.work.all()] == ["map"]
    market_clear(market_id=alice.market_id)
    names = [t["name"] for t in alice_client.get(reverse("dashboard-data"), {"jobs": "mine"}).json()["figures"]["jobs"]["data"]]
    assert names == [f"#{job.pk} maps-only · map"]


def test_dashboard_data_needs_login(client, market):
    assert client.get(reverse("dashboard-data")).status_code == 401


def test_dashboard_data_downsamples_long_series(alice_client, market):
    queue = Queue.objects.filter(market=market, name="analytics").get()
    types = list(market.resource_types.all())
    n = 3 * MAX_POINTS
    Market.objects.filter(pk=market.pk).update(sim_time=60.0 * n)
    MarketSample.objects.bulk_create(
        MarketSample(market=market, sim_time=60.0 * i, resource_type=t, benefit=0, loss=0, utilisation=0.5, active_jobs=1)
        for i in range(n) for t in types
    )
    FairnessSample.objects.bulk_create(
        FairnessSample(market=market, sim_time=60.0 * i, queue=queue, resource_type=t, usage=i, share=1, demand=1, entitled=i,
                       rho=1.0, running=1)
        for i in range(n) for t in types
    )
    figures = alice_client.get(reverse("dashboard-data")).json()["figures"]
    for key in ["util", "alloc-0", "rho-0", "sharing"]:
        for trace in figures[key]["data"]:
            assert len(trace["x"]) <= MAX_POINTS, key
    util = figures["util"]["data"][0]
    assert util["x"][0] == 0 and util["x"][-1] == pytest.approx(60.0 * (n - 1) / 3600, abs=1e-4)  # first and last kept, in hours


# --- Bid form ---------------------------------------------------------------------------------


def test_valid_bid_creates_job_and_hold_and_redirects(alice_client, alice):
    resp = alice_client.post(reverse("bid-new"), GOOD_BID)
    job = Job.objects.get(tenant=alice)
    assert resp.status_code == 302 and resp.url == reverse("job-detail", args=[job.pk])
    assert job.budget == Decimal("100") and job.name == "wordcount" and job.status == Job.Status.QUEUED
    assert {w.resource_type.name: (w.tasks, w.task_duration, w.weight) for w in job.work.all()} == {
        "map": (8, 12.5, 1.0), "reduce": (2, 30.0, 2.0)}
    hold = LedgerEntry.objects.get(job=job)
    assert hold.kind == LedgerEntry.Kind.HOLD and hold.amount == Decimal("100")
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("900"), Decimal("100"))
    page = alice_client.get(resp.url)
    assert b"Bid placed" in page.content


def test_bid_form_shows_balance_and_a_field_per_resource_type(alice_client):
    body = alice_client.get(reverse("bid-new")).content.decode()
    assert 'id="balance-available">1,000.00 credits<' in body
    for field in ["map_tasks", "map_duration", "map_weight", "reduce_tasks", "reduce_duration", "reduce_weight", "budget", "utility"]:
        assert f'name="{field}"' in body
    assert '<label class="visually-hidden" for="id_map_tasks">' in body


BAD_BIDS = {
    "negative budget": ({"budget": "-5"}, "budget"),
    "zero budget": ({"budget": "0"}, "budget"),
    "NaN budget": ({"budget": "NaN"}, "budget"),
    "infinite budget": ({"budget": "inf"}, "budget"),
    "text budget": ({"budget": "abc"}, "budget"),
    "absurd budget": ({"budget": "1e30"}, "budget"),
    "empty budget": ({"budget": ""}, "budget"),
    "too many decimals": ({"budget": "1.00001"}, "budget"),
    "budget above balance": ({"budget": "1000.01"}, "budget"),
    "negative tasks": ({"map_tasks": "-1"}, "map_tasks"),
    "fractional tasks": ({"map_tasks": "1.5"}, "map_tasks"),
    "zero duration": ({"map_duration": "0"}, "map_duration"),
    "NaN duration": ({"reduce_duration": "nan"}, "reduce_duration"),
    "negative weight": ({"reduce_weight": "-0.5"}, "reduce_weight"),
    "unknown utility": ({"utility": "cubic"}, "utility"),
    "no tasks at all": ({"map_tasks": "0", "reduce_tasks": "0"}, "__all__"),
    "only zero weights": ({"map_weight": "0", "reduce_weight": "0"}, "__all__"),
}


@pytest.mark.parametrize("changes,field", BAD_BIDS.values(), ids=BAD_BIDS.keys())
def test_invalid_bid_rerenders_with_field_error_and_leaves_ledger_unchanged(alice_client, alice, changes, field):
    entries, jobs = LedgerEntry.objects.count(), Job.objects.count()
    resp = alice_client.post(reverse("bid-new"), GOOD_BID | changes)
    assert resp.status_code == 200
    form = resp.context["form"]
    assert field in form.errors, form.errors
    assert 'aria-invalid="true"' in resp.content.decode() or field == "__all__"
    assert (LedgerEntry.objects.count(), Job.objects.count()) == (entries, jobs)
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("1000"), Decimal("0"))


def test_budget_above_balance_error_names_the_balance(alice_client):
    resp = alice_client.post(reverse("bid-new"), GOOD_BID | {"budget": "5000"})
    assert "Not enough funds" in " ".join(resp.context["form"].errors["budget"])


# --- Jobs: ownership, cancel, list ------------------------------------------------------------


def test_another_tenants_job_is_404(bob_client, alice_job):
    assert bob_client.get(reverse("job-detail", args=[alice_job.pk])).status_code == 404
    assert bob_client.post(reverse("job-cancel", args=[alice_job.pk])).status_code == 404
    alice_job.refresh_from_db()
    assert alice_job.status == Job.Status.QUEUED
    assert b"alice-etl" not in bob_client.get(reverse("job-list")).content
    assert b"alice-etl" not in b"".join(bob_client.get(reverse("job-list-csv")).streaming_content)


def test_cancel_releases_the_hold(alice_client, alice, alice_job):
    # a GET is the confirmation page: it cancels nothing
    assert alice_client.get(reverse("job-cancel", args=[alice_job.pk])).status_code == 200
    alice_job.refresh_from_db()
    assert alice_job.status in Job.ACTIVE
    resp = alice_client.post(reverse("job-cancel", args=[alice_job.pk]), follow=True)
    assert resp.status_code == 200 and b"cancelled" in resp.content
    alice_job.refresh_from_db()
    assert alice_job.status == Job.Status.CANCELLED
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("1000"), Decimal("0"))
    assert b"Cancel job" not in resp.content  # no cancel button for an inactive job


def test_cancelling_twice_shows_the_service_error(alice_client, alice_job):
    job_cancel(job=alice_job)
    resp = alice_client.post(reverse("job-cancel", args=[alice_job.pk]), follow=True)
    assert b"cannot be cancelled" in resp.content


def test_job_list_paginates_and_filters_by_status(alice_client, alice):
    jobs = [_submit(alice, budget="1", name=f"j{i}") for i in range(PAGE_SIZE + 5)]
    for job in jobs[:3]:
        job_cancel(job=job)
    page1 = alice_client.get(reverse("job-list"))
    assert len(page1.context["rows"]) == PAGE_SIZE
    page2 = alice_client.get(reverse("job-list"), {"page": 2})
    assert len(page2.context["rows"]) == 5
    cancelled = alice_client.get(reverse("job-list"), {"status": "cancelled"})
    assert {r["job"].pk for r in cancelled.context["rows"]} == {j.pk for j in jobs[:3]}
    assert alice_client.get(reverse("job-list"), {"status": "bogus"}).status_code == 200


def test_job_list_shows_current_shares_and_progress(alice_client, running_market, alice_job):
    resp = alice_client.get(reverse("job-list"))
    row = next(r for r in resp.context["rows"] if r["job"].pk == alice_job.pk)
    assert row["job"].status == Job.Status.RUNNING
    assert row["shares"][0] is not None and 0 < row["shares"][0] <= 1  # alice is alone in her queue: share 1 on map
    assert row["progress"][0][1] == 40 and 0 < row["progress"][0][0] < 40  # map: some of 40 tasks done


# --- CSV --------------------------------------------------------------------------------------


def _csv(resp) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(resp.streaming_content).decode())))


def test_job_csv_parses(alice_client, running_market, alice, alice_job):
    second = _submit(alice, name='with "quotes", commas')
    rows = _csv(alice_client.get(reverse("job-list-csv")))
    by_id = {int(r["id"]): r for r in rows}
    assert set(by_id) == {alice_job.pk, second.pk}
    assert by_id[second.pk]["name"] == 'with "quotes", commas'
    assert Decimal(by_id[alice_job.pk]["budget"]) == Decimal("50")
    assert by_id[alice_job.pk]["map_tasks"] == "40" and "reduce_share" in by_id[alice_job.pk]
    job_cancel(job=second)
    only = _csv(alice_client.get(reverse("job-list-csv"), {"status": "cancelled"}))
    assert [int(r["id"]) for r in only] == [second.pk]


def test_ledger_csv_parses(alice_client, alice, alice_job):
    rows = _csv(alice_client.get(reverse("ledger-csv")))
    assert [r["kind"] for r in rows] == ["hold", "deposit"]
    assert Decimal(rows[0]["amount"]) == Decimal("50") and rows[0]["job"] == str(alice_job.pk)
    assert Decimal(rows[-1]["available_after"]) == Decimal("1000")


def test_account_page_shows_balances_and_paginates_ledger(alice_client, alice):
    for i in range(PAGE_SIZE):
        _submit(alice, budget="1", name=f"j{i}")
    resp = alice_client.get(reverse("account"))
    body = resp.content.decode()
    assert 'id="account-available">975.00 credits<' in body and 'id="account-held">25.00 credits<' in body
    assert len(resp.context["page"].object_list) == PAGE_SIZE
    assert len(alice_client.get(reverse("account"), {"page": 2}).context["page"].object_list) == 1


def test_account_page_leaves_the_trace_replay_out_until_asked(alice_client, alice):
    # given a job alice placed and two the trace replay placed in her name (make run's demo)
    own = _submit(alice, budget="1", name="mine")
    for k in (1, 2):
        bid_submit(tenant=alice, name=f"trace-{k}", external_id=str(k), budget=Decimal("2"),
                   work=[WorkItem("map", 1, 10.0)])
    # when she opens her account page
    resp = alice_client.get(reverse("account"))
    # then her own job's entries and the deposit are listed, the replay's two holds summed in one line
    jobs = {e.job_id for e in resp.context["page"].object_list}
    assert jobs == {own.pk, None} and resp.context["replay_count"] == 2
    assert "2 entries of the trace replay's jobs are hidden" in resp.content.decode()
    # and ?replay=show lists them, with the pages' links keeping the choice
    shown = alice_client.get(reverse("account"), {"replay": "show"})
    assert len(shown.context["page"].object_list) == 4 and shown.context["query"] == "replay=show"


# --- Market settings --------------------------------------------------------------------------


def test_settings_are_staff_only(alice_client, client, market):
    assert alice_client.get(reverse("market-settings")).status_code == 403
    assert alice_client.post(reverse("market-settings"), {"alpha": "0.9"}).status_code == 403
    assert client.get(reverse("market-settings")).status_code == 302
    market.refresh_from_db()
    assert market.alpha == 0.5


def test_settings_page_shows_eq7_guidance_and_queue_tree(staff_client, alice_job):
    resp = staff_client.get(reverse("market-settings"))
    body = resp.content.decode()
    assert resp.status_code == 200
    # alice_job: 40 map tasks of 300 s and 5 reduce tasks of 60 s -> T_task = 12300 / 45 s; T_wait = 30 s -> 9.1 tasks
    assert resp.context["t_task"] == pytest.approx(12300 / 45)
    current = next(g for g in resp.context["guidance"] if g["current"])
    assert current["t_wait"] == 30.0 and current["text"] == "9.1"
    assert next(g for g in resp.context["guidance"] if g["t_wait"] == 0)["text"] == "no limit (LTRF)"
    assert 'id="twait-guidance"' in body and "Eq. 7" in body
    assert "analytics" in body and "/admin/marketplace/queue/" in body


def test_settings_change_is_audited(staff_client, market):
    form = {"alpha": "0.25", "t_wait": "10", "mechanism": "abacus", "fairshare_policy": "ltrf", "dispatch_mode": "stride",
            "clock_speed": "60", "reason": "test"}
    resp = staff_client.post(reverse("market-settings"), form)
    assert resp.status_code == 302
    market.refresh_from_db()
    assert (market.alpha, market.t_wait, market.fairshare_policy) == (0.25, 10.0, "ltrf")
    changes = {c.field: (c.old_value, c.new_value, c.changed_by.username) for c in ConfigChange.objects.filter(market=market)}
    assert changes == {"alpha": ("0.5", "0.25", "root"), "t_wait": ("30.0", "10.0", "root"), "fairshare_policy": ("hltrf", "ltrf", "root")}
    body = staff_client.get(reverse("market-settings")).content.decode()
    assert "<code>0.5</code> → <code>0.25</code>" in body


@pytest.mark.parametrize("changes,field", [
    ({"alpha": "1.5"}, "alpha"), ({"alpha": "nan"}, "alpha"), ({"t_wait": "-1"}, "t_wait"),
    ({"clock_speed": "0"}, "clock_speed"), ({"fairshare_policy": "wfq"}, "fairshare_policy"),
    ({"mechanism": "vcg"}, "mechanism"), ({"dispatch_mode": "random"}, "dispatch_mode"),
], ids=["alpha above 1", "alpha NaN", "negative T_wait", "zero clock speed", "unknown policy", "unknown mechanism",
        "unknown dispatch"])
def test_invalid_settings_show_field_errors_and_change_nothing(staff_client, market, changes, field):
    form = {"alpha": "0.5", "t_wait": "30", "mechanism": "abacus", "fairshare_policy": "hltrf", "dispatch_mode": "stride",
            "clock_speed": "60"} | changes
    resp = staff_client.post(reverse("market-settings"), form)
    assert resp.status_code == 200 and field in resp.context["form"].errors
    assert not ConfigChange.objects.exists()
