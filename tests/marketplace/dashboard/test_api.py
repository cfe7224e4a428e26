"""REST API: bids with field-level errors, ownership, market reads, schema."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.jobs import Job

GOOD = {"name": "wordcount", "budget": "100", "utility": "linear",
        "work": [{"resource_type": "map", "tasks": 8, "task_duration": 12.5, "weight": 1.0},
                 {"resource_type": "reduce", "tasks": 2, "task_duration": 30, "weight": 2.0}]}


def _post(client: APIClient, body: dict | str):
    raw = body if isinstance(body, str) else json.dumps(body)
    return client.post("/api/jobs/", raw, content_type="application/json")


def _with(**changes) -> dict:
    body = json.loads(json.dumps(GOOD))
    body.update(changes)
    return body


def test_submit_bid_returns_job_with_hold(alice_api, alice):
    resp = _post(alice_api, GOOD)
    assert resp.status_code == 201, resp.content
    data = resp.json()
    assert data["status"] == "queued" and data["queue"] == "root.orga.analytics"
    assert Decimal(data["held"]) == Decimal("100")
    assert [w["resource_type"] for w in data["work"]] == ["map", "reduce"]
    alice.account.refresh_from_db()
    assert alice.account.available == Decimal("900")


BAD = {
    "negative budget": (_with(budget="-1"), "budget"),
    "zero budget": (_with(budget="0"), "budget"),
    "string NaN budget": (_with(budget="NaN"), "budget"),
    "non-numeric budget": (_with(budget="lots"), "budget"),
    "absurd budget": (_with(budget="1e30"), "budget"),
    "budget above balance": (_with(budget="1000.5"), "budget"),
    "unknown resource type": (_with(work=[{"resource_type": "gpu", "tasks": 1, "task_duration": 1}]), "work"),
    "negative task count": (_with(work=[{"resource_type": "map", "tasks": -3, "task_duration": 1}]), "work"),
    "no work": (_with(work=[]), "work"),
    "unknown utility": (_with(utility="cubic"), "utility"),
}


@pytest.mark.parametrize("body,field", BAD.values(), ids=BAD.keys())
def test_bad_bid_is_400_with_field_error_and_ledger_unchanged(alice_api, alice, body, field):
    entries = LedgerEntry.objects.count()
    resp = _post(alice_api, body)
    assert resp.status_code == 400, resp.content
    assert field in resp.json(), resp.json()
    assert LedgerEntry.objects.count() == entries and not Job.objects.exists()
    assert ledger_reconcile(account=alice.account) == []


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_bare_json_nan_budget_is_a_field_error(alice_api, literal):
    raw = json.dumps(GOOD).replace('"budget": "100"', f'"budget": {literal}')
    resp = _post(alice_api, raw)
    assert resp.status_code == 400 and "budget" in resp.json(), resp.content


def test_tenant_cannot_read_or_cancel_another_tenants_job(alice, bob_api, alice_api):
    job = bid_submit(tenant=alice, budget="10", work=[WorkItem("map", 1, 1.0)])
    assert bob_api.get(f"/api/jobs/{job.pk}/").status_code == 404
    assert bob_api.post(f"/api/jobs/{job.pk}/cancel/").status_code == 404
    assert bob_api.get("/api/jobs/").json()["count"] == 0
    assert Job.objects.get(pk=job.pk).status == Job.Status.QUEUED
    assert alice_api.get(f"/api/jobs/{job.pk}/").status_code == 200


def test_cancel_via_api_releases_hold(alice_api, alice):
    job_id = _post(alice_api, GOOD).json()["id"]
    resp = alice_api.post(f"/api/jobs/{job_id}/cancel/")
    assert resp.status_code == 200 and resp.json()["status"] == "cancelled"
    assert alice_api.post(f"/api/jobs/{job_id}/cancel/").status_code == 409  # the job ended: a conflict with its state
    alice.account.refresh_from_db()
    assert alice.account.held == 0


def test_job_list_is_paginated_and_filterable(alice_api, alice):
    for _ in range(3):
        bid_submit(tenant=alice, budget="1", work=[WorkItem("map", 1, 1.0)])
    data = alice_api.get("/api/jobs/?status=queued").json()
    assert data["count"] == 3 and len(data["results"]) == 3
    assert alice_api.get("/api/jobs/?status=finished").json()["count"] == 0


def test_anonymous_is_refused():
    assert APIClient().get("/api/jobs/").status_code in (401, 403)


def test_market_state_and_allocation(alice_api, alice, market, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = bid_submit(tenant=alice, budget="50", work=[WorkItem("map", 3, 5.0)])
    state = alice_api.get("/api/market/").json()
    assert state["jobs"]["queued"] == 1 and state["state_version"] == state["cleared_version"]
    assert {r["name"] for r in state["resources"]} == {"map", "reduce"}
    # the implied price of map slots is the budget spread over their capacity
    assert state["prices"]["map"] == pytest.approx(50 / 10)
    alloc = alice_api.get("/api/market/allocation/").json()
    assert [j["job_id"] for j in alloc["jobs"]] == [job.pk]
    assert alloc["jobs"][0]["shares"]["map"] == pytest.approx(1.0)


def test_account_and_ledger(alice_api):
    _post(alice_api, GOOD)
    acct = alice_api.get("/api/account/").json()
    assert (Decimal(acct["available"]), Decimal(acct["held"])) == (Decimal("900"), Decimal("100"))
    kinds = [e["kind"] for e in alice_api.get("/api/account/ledger/").json()["results"]]
    assert kinds == ["hold", "deposit"]


def test_token_authentication(alice):
    client = APIClient()
    resp = client.post("/api/auth/token/", {"username": "alice", "password": "pw-for-tests-1"})
    assert resp.status_code == 200
    client.credentials(HTTP_AUTHORIZATION=f"Token {resp.json()['token']}")
    assert client.get("/api/jobs/").status_code == 200


def test_openapi_schema_and_offline_docs(alice_api):
    schema = alice_api.get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert "/api/jobs/" in paths and "/api/market/allocation/" in paths
    docs = alice_api.get("/api/docs/")
    html = docs.content.decode()
    assert docs.status_code == 200 and "cdn" not in html.lower() and "/static/drf_spectacular_sidecar/" in html


@pytest.fixture
def staff_api(market):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("ops", password="pw-ops-123", is_staff=True)
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_staff_choose_the_stages_by_name_through_the_api(staff_api, market):
    # given the default stages, when staff switch the mechanism and the dispatch
    resp = staff_api.patch(reverse("api-market"), {"mechanism": "proportional", "dispatch_mode": "lottery", "reason": "trial"},
                           format="json")
    # then the market uses them, and the change is audited
    assert resp.status_code == 200, resp.content
    assert (resp.json()["mechanism"], resp.json()["dispatch_mode"], resp.json()["fairshare_policy"]) == ("proportional", "lottery", "hltrf")
    audit = {c.field: (c.old_value, c.new_value, c.reason) for c in market.config_changes.all()}
    assert audit == {"mechanism": ("abacus", "proportional", "trial"), "dispatch_mode": ("stride", "lottery", "trial")}


@pytest.mark.parametrize("field", ["mechanism", "fairshare_policy", "dispatch_mode"])
def test_an_unknown_stage_name_is_a_field_error_and_changes_nothing(staff_api, market, field):
    resp = staff_api.patch(reverse("api-market"), {field: "drf-prime"}, format="json")
    assert resp.status_code == 400 and field in resp.json()
    assert "drf-prime" in resp.json()[field][0]
    market.refresh_from_db()
    assert (market.mechanism, market.fairshare_policy, market.dispatch_mode) == ("abacus", "hltrf", "stride")
    assert not market.config_changes.exists()


def test_tenants_cannot_change_the_market(alice_api, market):
    assert alice_api.patch(reverse("api-market"), {"alpha": 0.1}, format="json").status_code == 403
    market.refresh_from_db()
    assert market.alpha == 0.5
