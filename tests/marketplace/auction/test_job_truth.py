"""Job truth: a cancelled job is not a finished one; the start time kept
at completion is the one shown while the job ran; the cancel asks for confirmation."""

from __future__ import annotations

import pytest
from django.urls import reverse

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.market.models.jobs import Job
from marketplace.market.models.queues import Queue
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.config import queue_save


def test_start_time_survives_an_engine_restart(market, alice, django_capture_on_commit_callbacks):
    # given a job of 2 waves of 40 s tasks that started at t = 0
    with django_capture_on_commit_callbacks(execute=True):
        job = bid_submit(tenant=alice, budget="10", work=[WorkItem("map", 20, 40.0)])
    cluster_advance(market_id=market.pk, until=10.0)
    job.refresh_from_db()
    shown_while_running = job.sim_start_time
    assert job.status == Job.Status.RUNNING and shown_while_running is not None
    # when the queue tree changes mid-run (the engine restarts; running tasks go back to pending)
    with django_capture_on_commit_callbacks(execute=True):
        queue_save(queue=Queue(market=market, name="newcomer", parent=Queue.objects.get(market=market, parent=None), weight=1.0))
    cluster_advance(market_id=market.pk, until=10_000.0)
    # then the finished job keeps the start it showed while it ran
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED
    assert job.sim_start_time == shown_while_running


def test_a_cancelled_job_has_no_response_time_and_reads_cancelled(market, alice, client):
    job = bid_submit(tenant=alice, budget="10", work=[WorkItem("map", 5, 40.0)])
    job_cancel(job=job, user=alice.user)
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED and job.sim_finish_time is not None
    assert job.response_time is None
    client.force_login(alice.user)
    html = client.get(reverse("job-list")).content.decode()
    assert "Cancelled" in html and "Finished" not in html.split("<tbody data-fragment=\"job-rows\">")[1]
    detail = client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "Cancelled at" in detail and "Response time" not in detail


def test_cancel_asks_for_confirmation_first(market, alice, client):
    job = bid_submit(tenant=alice, budget="10", work=[WorkItem("map", 5, 40.0)])
    client.force_login(alice.user)
    url = reverse("job-cancel", args=[job.pk])
    # the job page links to a confirmation, it does not cancel
    detail = client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert f'href="{url}"' in detail
    # the confirmation page is a form that posts back; opening it changes nothing
    page = client.get(url)
    assert page.status_code == 200
    assert f'action="{url}"' in page.content.decode() and 'method="post"' in page.content.decode()
    job.refresh_from_db()
    assert job.status in Job.ACTIVE
    # confirming cancels
    response = client.post(url)
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED
    # a second look at the confirmation of a cancelled job says so and goes back
    again = client.get(url)
    assert again.status_code == 302 and again.url == reverse("job-detail", args=[job.pk])


@pytest.mark.parametrize("other", ["bob"])
def test_cancel_confirmation_of_another_tenants_job_is_404(market, alice, bob, client, other):
    job = bid_submit(tenant=bob, budget="10", work=[WorkItem("map", 5, 40.0)])
    client.force_login(alice.user)
    assert client.get(reverse("job-cancel", args=[job.pk])).status_code == 404


def test_share_legend_labels_carry_the_job_numbers_of_the_tables(market, alice, bob, client):
    import re

    from marketplace.market.services.clearing import market_clear

    # given jobs whose names hold other numbers (as replayed trace jobs do)
    jobs = [bid_submit(tenant=t, budget="10", name=n, work=[WorkItem("map", 30, 300.0)])
            for t, n in ((alice, "trace-3"), (bob, "trace-1"), (alice, ""))]
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, until=120.0)
    client.force_login(alice.user)
    figures = client.get(reverse("dashboard-data")).json()["figures"]
    detail = client.get(reverse("job-detail", args=[jobs[0].pk])).content.decode()
    # then each trace's legend starts with "#<job id>", the job of its legend group, as on the job pages
    traces = figures["jobs"]["data"]
    assert traces
    for trace in traces:
        number = re.match(r"#(\d+)\b", trace["name"])
        assert number and number.group(1) == trace["legendgroup"], trace["name"]
        assert int(number.group(1)) in {j.pk for j in jobs}
    assert f"Job #{jobs[0].pk}" in detail
