"""Staff open every job (and the staff list links each id), the demo
has VM pools, and the job list filters mine / replayed / all and searches by name."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from marketplace.auction.services import WorkItem, bid_submit
from marketplace.pools.models import VMPool

WORK = [WorkItem("map", 1, 10.0)]


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin(db):  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_user("root", password="pw-for-tests-1", is_staff=True)


def test_staff_open_every_job_and_the_staff_list_links_them(market, alice, admin):
    job = bid_submit(tenant=alice, budget="5", name="alices-etl", work=WORK)
    page = _client(admin).get(f"/jobs/{job.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "alices-etl" in html and "alice" in html
    assert 'id="cancel-link"' not in html  # only its tenant cancels it
    staff_list = _client(admin).get("/staff/jobs/").content.decode()
    assert f'href="/jobs/{job.pk}/"' in staff_list


def test_another_tenant_still_gets_a_404(market, alice, bob):
    job = bid_submit(tenant=alice, budget="5", name="alices-etl", work=WORK)
    assert _client(bob.user).get(f"/jobs/{job.pk}/").status_code == 404


def test_the_demo_market_has_vm_pools(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("seed_demo")
    assert VMPool.objects.filter(size__gt=0).count() >= 3
    call_command("seed_demo")  # idempotent: the pools are not made twice
    assert VMPool.objects.count() == 3
    tenant = get_user_model().objects.get(username="alice")
    page = _client(tenant).get("/cura/jobs/").content.decode()
    assert "no VM pools yet" not in page


def test_the_job_list_shows_mine_replayed_or_all_and_searches_names(market, alice):
    mine = bid_submit(tenant=alice, budget="5", name="nightly-report", work=WORK)
    replayed = [bid_submit(tenant=alice, budget="5", name=f"trace-{k}", external_id=str(k), work=WORK) for k in range(3)]
    client = _client(alice.user)

    def ids(query: str) -> set[int]:
        html = client.get(f"/jobs/{query}").content.decode()
        return {j.pk for j in [mine, *replayed] if f'href="/jobs/{j.pk}/"' in html}

    assert ids("?scope=mine") == {mine.pk}
    assert ids("?scope=replayed") == {j.pk for j in replayed}
    assert ids("?scope=all") == ids("") == {mine.pk, *(j.pk for j in replayed)}
    assert ids("?q=nightly") == {mine.pk}
    assert ids("?q=TRACE-1&scope=all") == {replayed[1].pk}
    assert ids("?q=nightly&scope=replayed") == set()
    html = client.get("/jobs/?scope=mine&q=night").content.decode()
    assert 'value="night"' in html and "jobs.csv?" in html and "scope=mine" in html
