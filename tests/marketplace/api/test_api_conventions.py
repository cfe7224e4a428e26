"""A 201 carries Location, all field errors come at once, conflicts are 409,
the token endpoint rotates keys as the README says, money is a 4-place string everywhere, and an
unknown /api/ path is a JSON 404 (in debug too)."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from marketplace.market.models.jobs import Job

BID = {"budget": "5", "work": [{"resource_type": "map", "tasks": 2, "task_duration": 10.0}]}
QUOTE = {"resource_type": "map", "units": 4, "duration": 600, "arrival": 0, "deadline": 3600}
MONEY = re.compile(r"^-?\d+\.\d{4}$")


def _post(api: APIClient, path: str, body: object):  # type: ignore[no-untyped-def]
    return api.post(path, json.dumps(body), content_type="application/json")


def test_created_answers_carry_the_location_of_what_they_created(alice_api):
    bid = _post(alice_api, "/api/jobs/", BID)
    assert bid.status_code == 201 and bid["Location"].endswith(f"/api/jobs/{bid.json()['id']}/")
    assert alice_api.get(bid["Location"]).status_code == 200
    quote = _post(alice_api, "/api/reservations/quotes/", QUOTE)
    assert quote.status_code == 201 and quote["Location"].endswith(f"/api/reservations/quotes/{quote.json()['id']}/")
    accepted = alice_api.post(f"/api/reservations/quotes/{quote.json()['id']}/accept/")
    assert accepted.status_code == 201
    assert accepted["Location"].endswith(f"/api/reservations/{accepted.json()['id']}/")
    assert alice_api.get(accepted["Location"]).json()["id"] == accepted.json()["id"]


def test_every_field_error_of_a_bid_comes_at_once(alice_api):
    bad = {"budget": "-3", "utility": "quadratic", "work": [{"resource_type": "gpu", "tasks": 1, "task_duration": 1.0}]}
    resp = _post(alice_api, "/api/jobs/", bad)
    assert resp.status_code == 400
    assert {"budget", "utility", "work"} <= set(resp.json()), resp.json()
    assert not Job.objects.exists()


def test_conflicts_with_the_current_state_are_409(alice_api):
    job = _post(alice_api, "/api/jobs/", BID).json()
    assert alice_api.post(f"/api/jobs/{job['id']}/cancel/").status_code == 200
    again = alice_api.post(f"/api/jobs/{job['id']}/cancel/")
    assert again.status_code == 409 and "status" in again.json()
    quote = _post(alice_api, "/api/reservations/quotes/", QUOTE).json()
    assert alice_api.post(f"/api/reservations/quotes/{quote['id']}/accept/").status_code == 201
    second = alice_api.post(f"/api/reservations/quotes/{quote['id']}/accept/")
    assert second.status_code == 409 and "quote" in second.json()
    assert alice_api.post(f"/api/reservations/quotes/{quote['id']}/decline/").status_code == 409


def test_obtaining_a_token_again_rotates_it(alice):
    api = APIClient()
    first = api.post("/api/auth/token/", {"username": "alice", "password": "pw-for-tests-1"}).json()["token"]
    second = api.post("/api/auth/token/", {"username": "alice", "password": "pw-for-tests-1"}).json()["token"]
    assert first != second
    assert api.get("/api/account/", HTTP_AUTHORIZATION=f"Token {first}").status_code == 401  # the old key stopped working
    assert api.get("/api/account/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 200


def _money_values(value: object, key: str = "") -> list[tuple[str, object]]:
    if isinstance(value, dict):
        return [kv for k, v in value.items() for kv in _money_values(v, k)]
    if isinstance(value, list):
        return [kv for v in value for kv in _money_values(v, key)]
    return [(key, value)]


def test_reservation_money_is_a_four_place_string(alice_api, bob_api):
    for k in range(3):  # prices such as 0.1 + 0.2 summed as floats give 0.30000000000000004
        q = _post(bob_api, "/api/reservations/quotes/", QUOTE | {"units": 1 + k, "arrival": 600 * k}).json()
        assert bob_api.post(f"/api/reservations/quotes/{q['id']}/accept/").status_code == 201
    quote = _post(alice_api, "/api/reservations/quotes/", QUOTE).json()
    assert quote["offers"] and all(p is None or MONEY.match(p) for _, p in quote["offers"]), quote["offers"][:3]
    assert all(MONEY.match(p) for _, p in quote["alternatives"])
    totals = alice_api.get("/api/reservations/prices/?resource=map&slots=4").json()["totals"]
    for key in ("revenue", "welfare", "requested_value"):
        assert isinstance(totals[key], str) and MONEY.match(totals[key]), totals
    assert Decimal(totals["revenue"]) > 0


@pytest.mark.parametrize("debug", [False, True])
def test_an_unknown_api_path_is_a_json_404(alice_api, settings, debug):
    settings.DEBUG = debug
    resp = alice_api.get("/api/no/such/thing/")
    assert resp.status_code == 404 and resp["Content-Type"].startswith("application/json")
    assert resp.json() == {"detail": "Not found."}
    assert alice_api.post("/api/jobs/999999/nothing/").status_code == 404
