"""The job page and the job list follow the job: their JSON pollers answer the
live parts with an ETag, a 304 while nothing changed, and the new status once the job has finished."""

from __future__ import annotations

from django.test import Client

from marketplace.auction.services import WorkItem, bid_submit
from marketplace.market.services.clock import cluster_advance


def test_the_job_pages_poller_follows_the_job(market, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = bid_submit(tenant=alice, budget="5", name="quick", work=[WorkItem("map", 1, 10.0)])
    client = Client()
    client.force_login(alice.user)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'data-live-url="/jobs/{job.pk}/live.json"' in page and 'data-status="queued"' in page
    first = client.get(f"/jobs/{job.pk}/live.json")
    assert first.status_code == 200 and first.json()["status"] == "queued" and first.has_header("ETag")
    assert "Queued" in first.json()["fragments"]["job-head"]
    again = client.get(f"/jobs/{job.pk}/live.json", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304
    cluster_advance(market_id=market.pk, until=market.sim_time + 120.0)
    done = client.get(f"/jobs/{job.pk}/live.json", HTTP_IF_NONE_MATCH=first["ETag"])
    assert done.status_code == 200 and done.json()["status"] == "finished"
    assert "Finished" in done.json()["fragments"]["job-head"] and "Queued" not in done.json()["fragments"]["job-head"]


def test_the_job_lists_poller_follows_its_filters(market, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        mine = bid_submit(tenant=alice, budget="5", name="nightly", work=[WorkItem("map", 1, 10.0)])
        bid_submit(tenant=alice, budget="5", name="trace-1", external_id="1", work=[WorkItem("map", 1, 10.0)])
    client = Client()
    client.force_login(alice.user)
    page = client.get("/jobs/?scope=mine").content.decode()
    assert 'data-live-url="/jobs/live.json?scope=mine&amp;page=1"' in page
    rows = client.get("/jobs/live.json?scope=mine&page=1")
    html = rows.json()["fragments"]["job-rows"]
    assert f"/jobs/{mine.pk}/" in html and "trace-1" not in html and "Queued" in html
    assert client.get("/jobs/live.json?scope=mine&page=1", HTTP_IF_NONE_MATCH=rows["ETag"]).status_code == 304
    cluster_advance(market_id=market.pk, until=market.sim_time + 120.0)
    assert "Finished" in client.get("/jobs/live.json?scope=mine&page=1").json()["fragments"]["job-rows"]
