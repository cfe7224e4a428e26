"""A real Celery worker computes the dashboard's figures after a tick while someone watches, into the
shared Redis cache, so the web process's next poll only reads them (``dashboard.figures``)."""

from __future__ import annotations

import json
import time
from unittest import mock

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.celery import app
from marketplace.dashboard import figures
from marketplace.market.models.market import Market
from marketplace.market.tasks import cluster_tick_task
from tests.factories import MarketFactory, TenantFactory
from tests.integration.polling import wait_for

pytestmark = pytest.mark.integration


def test_the_worker_computes_the_watched_dashboard_s_figures_after_a_tick(celery_worker_process):
    # given a market whose dashboard a tenant polls (this process publishes; the worker clears)
    assert not app.conf.task_always_eager and "Redis" in settings.CACHES["default"]["BACKEND"]  # shared with the worker
    market = MarketFactory(name="figures")
    tenant = TenantFactory(market=market, username="fig-alice")
    client = Client()
    client.force_login(tenant.user)
    bid_submit(tenant=tenant, budget="40", work=[WorkItem("map", 3, 5.0), WorkItem("reduce", 1, 5.0)])
    wait_for(lambda: Market.objects.get(pk=market.pk).cleared_version == market.state_version + 1, 60, "the worker to clear the bid")
    assert client.get("/dashboard/data.json").status_code == 200  # computed in the poll; the dashboard is watched
    assert figures.watched(market.pk)
    polled = figures.figures_version(Market.objects.get(pk=market.pk))
    # when the clock ticks (the job runs: a new sample and, at its end, a new clearing)
    Market.objects.filter(pk=market.pk).update(clock_speed=60.0, clock_wall_at=None)
    cluster_tick_task(market.pk)
    time.sleep(1.0)
    cluster_tick_task(market.pk)  # 60 simulated s later: new samples, so a new figures version
    fresh = Market.objects.get(pk=market.pk)
    assert figures.figures_version(fresh) != polled
    key = f"dashboard-figures:{figures.figures_version(fresh)}"
    # then the worker computes that version's figures into the shared cache ...
    text = wait_for(lambda: cache.get(key), 60, "the worker to compute the new version's figures")
    assert json.loads(text) == json.loads(json.dumps(figures.shared_figures(fresh), cls=figures.PlotlyJSONEncoder))
    # ... and the next poll only reads them
    with mock.patch.object(figures, "shared_figures", wraps=figures.shared_figures) as shared:
        body = client.get("/dashboard/data.json").json()
    assert shared.call_count == 0
    assert {k: v for k, v in body["figures"].items() if k != "jobs"} == json.loads(text)
