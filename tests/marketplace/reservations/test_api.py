"""The reservations API: quote, accept (409 when moved), decline, one-shot request, field errors,
tenants' isolation, the price curve, and the cluster-manager interface (role, ETag, update)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from marketplace.market.models.jobs import Job
from marketplace.market.models.queues import ResourceType
from marketplace.reservations.api import cluster_manager_group
from marketplace.reservations.models import Reservation, ReservationSettings

REQUEST = {"resource_type": "map", "units": 4, "duration": 600, "arrival": 0, "deadline": 3600}


@pytest.fixture
def manager_api(market) -> APIClient:
    user = get_user_model().objects.create_user(username="yarn-rm", password="pw-for-tests-1")
    user.groups.add(cluster_manager_group())
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_quote_then_accept(alice_api):
    quote = alice_api.post("/api/reservations/quotes/", REQUEST, format="json")
    assert quote.status_code == 201, quote.data
    q = quote.data
    assert (q["start"], q["price"], q["status"]) == (0.0, "0.4000", "open")
    assert [a[0] for a in q["alternatives"]] == [600.0, 1200.0, 1800.0]  # equal prices: the earliest distinct blocks
    accepted = alice_api.post(f"/api/reservations/quotes/{q['id']}/accept/")
    assert accepted.status_code == 201, accepted.data
    assert (accepted.data["start"], accepted.data["end"], accepted.data["price"]) == (0.0, 600.0, "0.4000")
    mine = alice_api.get("/api/reservations/")
    assert [r["id"] for r in mine.data["results"]] == [accepted.data["id"]]
    again = alice_api.post(f"/api/reservations/quotes/{q['id']}/accept/")
    assert again.status_code == 409 and "quote" in again.data  # a conflict with the quote's state


def test_a_quote_the_market_made_dearer_answers_409_with_the_new_quote(alice_api, bob_api):
    mine = alice_api.post("/api/reservations/quotes/", REQUEST | {"units": 10, "deadline": 1200}, format="json").data
    bob = bob_api.post("/api/reservations/request/", REQUEST | {"units": 1, "deadline": 600, "value": "10"}, format="json")
    assert bob.status_code == 201 and bob.data["accepted"]
    ReservationSettings.objects.update(reserve_price=0.02)  # the market moved: every unit-slot is dearer
    moved = alice_api.post(f"/api/reservations/quotes/{mine['id']}/accept/")
    assert moved.status_code == 409
    assert moved.data["quote"]["start"] == 600.0 and moved.data["quote"]["status"] == "open"
    assert "more than the" in moved.data["detail"]


@pytest.mark.parametrize(
    ("change", "field"),
    [({"units": 0}, "units"), ({"units": 50}, "units"), ({"deadline": -5}, "deadline"), ({"duration": 7200}, "duration"),
     ({"value": "NaN"}, "value"), ({"value": "-3"}, "value"), ({"resource_type": "gpu"}, "resource_type")],
)
def test_field_errors(alice_api, change, field):
    response = alice_api.post("/api/reservations/quotes/", REQUEST | change, format="json")
    assert response.status_code == 400 and field in response.data, response.data


def test_a_non_finite_number_gets_a_field_error(alice_api):
    body = '{"resource_type": "map", "units": 4, "duration": Infinity, "arrival": 0, "deadline": 3600}'
    response = alice_api.post("/api/reservations/quotes/", body, content_type="application/json")
    assert response.status_code == 400 and "duration" in response.data


def test_one_shot_request_declined_when_the_value_is_short(alice_api):
    response = alice_api.post("/api/reservations/request/", REQUEST | {"value": "0.1"}, format="json")
    assert response.status_code == 200 and response.data["accepted"] is False and response.data["reservation"] is None


def test_other_tenants_quotes_are_invisible(alice_api, bob_api):
    q = alice_api.post("/api/reservations/quotes/", REQUEST, format="json").data
    assert bob_api.get(f"/api/reservations/quotes/{q['id']}/").status_code == 404
    assert bob_api.post(f"/api/reservations/quotes/{q['id']}/accept/").status_code == 404
    assert bob_api.post(f"/api/reservations/quotes/{q['id']}/decline/").status_code == 404
    assert alice_api.post(f"/api/reservations/quotes/{q['id']}/decline/").data["status"] == "declined"


def test_the_price_curve_shows_promised_units(alice_api):
    alice_api.post("/api/reservations/request/", REQUEST | {"units": 7, "value": "100"}, format="json")
    curve = alice_api.get("/api/reservations/prices/?resource=map&slots=20").data
    assert curve["capacity"] == 10 and len(curve["times"]) == 20
    assert curve["promised"][:10] == [7] * 10 and curve["promised"][10:] == [0] * 10
    assert curve["totals"]["reservations"] == 1
    assert alice_api.get("/api/reservations/prices/?resource=gpu").status_code == 400


def test_tenants_cannot_use_the_cluster_interface(alice_api):
    assert alice_api.get("/api/cluster/allocation/").status_code == 403
    assert alice_api.post("/api/cluster/update/", {"terminated": []}, format="json").status_code == 403
    assert APIClient().get("/api/cluster/allocation/").status_code in (401, 403)


def test_current_allocation_with_etag_and_empty_allocations(manager_api, alice_api, market):
    alice_api.post("/api/reservations/request/", REQUEST | {"arrival": 0, "deadline": 3600, "value": "100"}, format="json")
    first = manager_api.get("/api/cluster/allocation/")
    assert first.status_code == 200
    jobs = first.data["jobs"]
    # the booked job is inside its window and holds nothing yet: an empty allocation
    assert len(jobs) == 1 and jobs[0]["units"] == {} and jobs[0]["reservation"]["units"] == 4
    etag = first["ETag"]
    assert manager_api.get("/api/cluster/allocation/", HTTP_IF_NONE_MATCH=etag).status_code == 304
    from marketplace.market.services.clock import cluster_advance

    cluster_advance(market_id=market.pk, until=30.0)
    moved = manager_api.get("/api/cluster/allocation/", HTTP_IF_NONE_MATCH=etag)
    assert moved.status_code == 200 and moved.data["jobs"][0]["units"] == {"map": 4}


def test_update_changes_capacity_and_terminates_jobs(manager_api, alice_api, market):
    booked = alice_api.post("/api/reservations/request/", REQUEST | {"value": "100"}, format="json").data["reservation"]
    response = manager_api.post(
        "/api/cluster/update/", {"capacity": {"map": 12}, "terminated": [booked["job"]]}, format="json",
    )
    assert response.status_code == 200, response.data
    assert response.data == {"capacity": {"map": 12}, "terminated": [booked["job"]], "replanned": True}
    assert ResourceType.objects.get(market=market, name="map").capacity == 12
    assert Job.objects.get(pk=booked["job"]).status == Job.Status.CANCELLED
    assert Reservation.objects.get(pk=booked["id"]).job.status == "cancelled"
    # the terminated job's promised units are free again
    curve = alice_api.get("/api/reservations/prices/?resource=map&slots=5").data
    assert curve["promised"] == [0] * 5 and curve["capacity"] == 12
    bad = manager_api.post("/api/cluster/update/", {"capacity": {"gpu": 3}}, format="json")
    assert bad.status_code == 400 and "capacity" in bad.data


def test_update_refuses_what_the_simulated_cluster_counts_itself(manager_api, market):
    # consumption and waiting tasks are the simulated cluster's own: refused with nothing written,
    # never acknowledged and dropped
    before = ResourceType.objects.get(market=market, name="map").capacity
    answer = manager_api.post("/api/cluster/update/", {"capacity": {"map": before + 5}, "pending": {"1": {"map": 3}},
                                                       "consumption": {"1": {"map": 2}}}, format="json")
    assert answer.status_code == 400 and set(answer.data) == {"pending", "consumption"}
    assert ResourceType.objects.get(market=market, name="map").capacity == before


def test_accept_and_request_with_an_idempotency_key_move_money_once(alice_api, alice):
    from marketplace.ledger.models import LedgerEntry

    q = alice_api.post("/api/reservations/quotes/", REQUEST, format="json").data
    first = alice_api.post(f"/api/reservations/quotes/{q['id']}/accept/", HTTP_IDEMPOTENCY_KEY="accept-1")
    again = alice_api.post(f"/api/reservations/quotes/{q['id']}/accept/", HTTP_IDEMPOTENCY_KEY="accept-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true" and again.data == first.data
    body = REQUEST | {"units": 1, "arrival": 600, "value": "10"}
    one = alice_api.post("/api/reservations/request/", body, format="json", HTTP_IDEMPOTENCY_KEY="req-1")
    two = alice_api.post("/api/reservations/request/", body, format="json", HTTP_IDEMPOTENCY_KEY="req-1")
    assert one.status_code == two.status_code == 201 and one.data == two.data
    other = alice_api.post("/api/reservations/request/", body | {"units": 2}, format="json", HTTP_IDEMPOTENCY_KEY="req-1")
    assert other.status_code == 422
    assert Reservation.objects.filter(job__tenant=alice).count() == 2  # one per key, not one per POST
    charges = LedgerEntry.objects.filter(account=alice.account, kind=LedgerEntry.Kind.CHARGE).count()
    assert charges == 2
