"""The price shown is the price paid (docs/economy.md, section 2): the bid preview states what a bid
pays per slot-second of its work at each budget, and a job that completes pays exactly that."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clock import cluster_advance

BID = {"budget": "40", "utility": "linear", "work": [
    {"resource_type": "map", "tasks": 10, "task_duration": 60.0, "weight": 2.0},
    {"resource_type": "reduce", "tasks": 2, "task_duration": 30.0, "weight": 1.0}]}
WORK = 10 * 60.0 + 2 * 30.0


def test_the_preview_s_paid_rate_is_what_the_completed_job_paid_per_slot_second(market: Market, alice_api: APIClient) -> None:
    body = alice_api.post("/api/bids/preview/", BID, format="json").json()
    assert body["paid_rate"] == pytest.approx(40 / WORK) and body["work"] == WORK
    assert body["suggested"]["paid_rate"] == pytest.approx(body["suggested"]["price_level"])  # the level x work
    assert [r["paid_rate"] for r in body["curve"]] == pytest.approx([float(Decimal(r["budget"])) / WORK for r in body["curve"]])
    job_id = alice_api.post("/api/jobs/", BID, format="json").json()["id"]
    cluster_advance(market_id=market.pk, seconds=3600)
    job = Job.objects.get(pk=job_id)
    assert job.status == Job.Status.FINISHED and float(job.charged) / WORK == pytest.approx(body["paid_rate"])


def test_the_bid_form_preview_shows_the_paid_rate(market: Market, alice: Tenant) -> None:
    client = Client()
    client.force_login(alice.user)
    form = {"name": "etl", "budget": "40", "utility": "linear", "map_tasks": "10", "map_duration": "60", "map_weight": "2",
            "reduce_tasks": "2", "reduce_duration": "30", "reduce_weight": "1", "action": "preview"}
    html = client.post(reverse("bid-new"), form).content.decode()
    shown = html.split('id="preview-paid-rate">')[1].split("</strong>")[0]
    assert f"{40 / WORK:.4g}" in shown and "per slot-second" in shown
