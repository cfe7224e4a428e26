"""VM pools pages and API (paper 004): staff edit with validation, tenants see each job's configuration."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from marketplace.ledger.services import account_deposit
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.tenants import Tenant
from marketplace.pools.models import CuraJob
from marketplace.pools.services.pools import pool_settings_update, pools_setup_paper


@pytest.fixture
def staff(market: Market) -> User:
    return User.objects.create_user("ops", password="pw", is_staff=True)


@pytest.fixture
def paper_pools(market: Market, alice: Tenant) -> None:
    account_deposit(account=alice.account, amount=Decimal("100000"), memo="the paper's costs are in the thousands")
    pools_setup_paper(market=market, at_level=False)  # the paper's prices: its costs
    pool_settings_update(market=market, framework_start_s=0.0)


def test_pools_page_is_staff_only(client: Client, alice: Tenant, staff: User) -> None:
    client.force_login(alice.user)
    assert client.get(reverse("pools")).status_code == 403
    client.force_login(staff)
    page = client.get(reverse("pools"))
    assert page.status_code == 200 and b"Create the pools of paper 004" in page.content


def test_staff_create_paper_pools_and_resize_with_validation(client: Client, market: Market, staff: User) -> None:
    client.force_login(staff)
    client.post(reverse("pools"), {"action": "paper"})
    page = client.get(reverse("pools"))
    assert b"VM-3" in page.content and b"fig-sizes" in page.content
    pool_id = market.vm_types.get(name="VM-1").pool.pk
    bad = client.post(reverse("pools"), {"action": "size", "p-pool": pool_id, "p-size": "-3"})
    assert bad.status_code == 200 and b"greater than or equal to 0" in bad.content
    client.post(reverse("pools"), {"action": "size", "p-pool": pool_id, "p-size": "64", "p-reason": "more small"})
    assert ConfigChange.objects.get(reason="more small").new_value == "64"
    bad = client.post(reverse("pools"), {"action": "settings", "s-beta": "-1", "s-reconf_window_s": "300", "s-boot_s": "60",
                                         "s-shutdown_s": "10", "s-framework_start_s": "10", "s-core_budget": "0"})
    assert b"greater than or equal to 0" in bad.content
    client.post(reverse("pools"), {"action": "settings", "s-beta": "2", "s-reconf_window_s": "300", "s-boot_s": "60",
                                   "s-shutdown_s": "10", "s-framework_start_s": "10", "s-core_budget": "0", "s-reason": "r"})
    assert ConfigChange.objects.get(field="pools.beta").new_value == "2.0"


def test_tenant_submits_a_cura_job_and_sees_its_configuration(client: Client, alice: Tenant, paper_pools: None) -> None:
    client.force_login(alice.user)
    response = client.post(reverse("cura-jobs"), {"job_type": "4", "deadline_in_s": "270"}, follow=True)
    assert b"10 \xc3\x97 VM-1 from 0 s to 250 s" in response.content
    assert b"416.6667" in response.content
    refused = client.post(reverse("cura-jobs"), {"job_type": "3", "deadline_in_s": "100"})
    assert b"earliest deadline that works is 258 s" in refused.content  # 257.35 s on 40 VM-3
    assert CuraJob.objects.count() == 1


def test_cura_api(alice_api: APIClient, paper_pools: None, market: Market) -> None:
    created = alice_api.post("/api/cura/jobs/", {"job_type": 2, "deadline_in_s": 275}, format="json")
    assert created.status_code == 201
    assert (created.data["vm_type"], created.data["vms"], created.data["start_s"]) == ("VM-2", 20, 0.0)
    refused = alice_api.post("/api/cura/jobs/", {"job_type": 3, "deadline_in_s": 50}, format="json")
    assert refused.status_code == 400 and "earliest deadline" in refused.data["deadline_in_s"][0]
    bad = alice_api.post("/api/cura/jobs/", data=json.dumps({"job_type": 9, "deadline_in_s": "NaN"}), content_type="application/json")
    assert bad.status_code == 400 and set(bad.data) == {"job_type", "deadline_in_s"}
    listed = alice_api.get("/api/cura/jobs/")
    assert [j["vm_type"] for j in listed.data["results"]] == ["VM-2"]
    pools = alice_api.get("/api/pools/")
    assert [p["size"] for p in pools.data["pools"]] == [40, 40, 40] and pools.data["pools"][1]["busy"] == 20
    assert alice_api.patch("/api/pools/", {"beta": 3}, format="json").status_code == 403


def test_pool_series_and_figures_follow_the_reservations(alice: Tenant, paper_pools: None, market: Market) -> None:
    from marketplace.pools.charts import pool_figures
    from marketplace.pools.selectors import pool_series, vm_types_of
    from marketplace.pools.services.jobs import cura_job_submit

    cura_job_submit(tenant=alice, job_type=4, deadline_in_s=270)  # 10 VM-1 over [0, 250)
    cura_job_submit(tenant=alice, job_type=4, deadline_in_s=150)  # 20 VM-1 over [0, 131.57)
    types = vm_types_of(market=market)
    series = pool_series(market=market, types=types)
    vm1 = {round(r["t"], 2): (r["size"], r["busy"]) for r in series["VM-1"]}
    assert vm1[0.0] == (40, 30) and vm1[131.57] == (40, 10) and vm1[250.0] == (40, 0)
    sizes, util = pool_figures(series)
    assert sizes["layout"]["xaxis"]["title"]["text"].startswith("Market clock")
    assert util["data"][0]["y"][0] == pytest.approx(30 / 40)


def test_staff_patch_pool_settings_through_the_api(staff: User, paper_pools: None, market: Market) -> None:
    api = APIClient()
    api.force_authenticate(staff)
    changed = api.patch("/api/pools/", {"beta": 0.5, "reason": "cheaper changes"}, format="json")
    assert changed.status_code == 200 and changed.data["settings"]["beta"] == 0.5
    assert ConfigChange.objects.get(field="pools.beta", reason="cheaper changes").new_value == "0.5"
    bad = api.patch("/api/pools/", {"beta": -1, "reconf_window_s": 0}, format="json")
    assert bad.status_code == 400 and set(bad.data) == {"beta", "reconf_window_s"}
    huge = api.patch("/api/pools/", {"core_budget": 248368007288275533824}, format="json")  # found by the schema fuzzer: a 500
    assert huge.status_code == 400 and set(huge.data) == {"core_budget"}


def test_a_cura_job_is_in_my_jobs_in_the_ledger_and_on_a_live_page(client: Client, alice: Tenant, paper_pools: None) -> None:
    # given a Cura job alice submitted
    from marketplace.pools.services.jobs import cura_job_submit

    job = cura_job_submit(tenant=alice, job_type=4, deadline_in_s=270)
    client.force_login(alice.user)
    link = f'href="/cura/jobs/#cura-{job.pk}"'
    # then My jobs lists it, with a link to its row, and its live rows carry it too
    mine = client.get(reverse("job-list")).content.decode()
    assert f"Cura job #{job.pk}</a>" in mine and link in mine and "10 \N{MULTIPLICATION SIGN} VM-1" in mine
    assert f"Cura job #{job.pk}" in client.get(reverse("job-list-live")).json()["fragments"]["part-jobs"]
    # and the ledger's hold names the job (not "a bid") and links to it
    ledger = client.get(reverse("account")).content.decode()
    assert link in ledger and "Hold for a bid" not in ledger and ">Hold<" in ledger
    # and the Cura page's rows are polled like the other job pages
    page = client.get(reverse("cura-jobs")).content.decode()
    assert 'data-live-url="/cura/jobs/live.json"' in page and f'id="cura-{job.pk}"' in page
    rows = client.get(reverse("cura-jobs-live"))
    assert rows.status_code == 200 and f'id="cura-{job.pk}"' in rows.json()["fragments"]["cura-rows"]
