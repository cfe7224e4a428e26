"""The schema is the contract: what it states is what the server does, and the reverse.

Statuses per operation (none a GET cannot get, 304 where there is an ETag), JSON-only bodies,
the token scheme, typed answers, the server's limits in the schema, booleans refused in number
fields, the quote acceptance's 409s in their documented shape, Cura jobs' 201 with Location,
and the JSON 404 for any /api/ path.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from marketplace.ledger.services import account_deposit
from marketplace.pools.services.pools import pools_setup_paper
from marketplace.reservations.models import ReservationQuote

REQUEST = {"resource_type": "map", "units": 4, "duration": 600, "arrival": 0, "deadline": 3600}
BID = {"budget": "10", "work": [{"resource_type": "map", "tasks": 2, "task_duration": 30}]}


@pytest.fixture
def schema(alice_api: APIClient) -> dict[str, Any]:
    return alice_api.get("/api/schema/?format=json").json()


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in schema["paths"].items() for method, op in ops.items()]


def test_reads_list_no_body_errors_and_writes_list_them(schema):
    for path, method, op in _operations(schema):
        codes = set(op["responses"])
        if method == "get":
            assert not codes & {"409", "411", "413", "415", "422"}, (path, codes)
        else:
            assert {"411", "413"} <= codes, (path, method, codes)
        if "requestBody" in op:
            assert list(op["requestBody"]["content"]) == ["application/json"], (path, method)
            assert "415" in codes
        has_key = any(p["name"] == "Idempotency-Key" for p in op.get("parameters", []))
        assert ("422" in codes) == has_key, (path, method)


def test_conditional_reads_document_etag_and_304(schema):
    for path in ("/api/jobs/", "/api/market/", "/api/market/rates/", "/api/cluster/allocation/"):
        op = schema["paths"][path]["get"]
        assert "If-None-Match" in {p["name"] for p in op["parameters"]}
        assert "304" in op["responses"] and "ETag" in op["responses"]["200"]["headers"], path


def test_the_token_scheme_states_its_prefix_and_the_login_asks_for_no_token(schema):
    scheme = schema["components"]["securitySchemes"]["tokenAuth"]
    assert scheme["x-token-prefix"] == "Token" and "Authorization: Token <key>" in scheme["description"]
    login = schema["components"]["schemas"]["LoginRequest"]
    assert set(login["properties"]) == {"username", "password"}
    login_answers = schema["paths"]["/api/auth/token/"]["post"]["responses"]
    assert not {"403", "404"} & set(login_answers) and login_answers["401"]["description"] == "Wrong username or password."


def test_the_servers_limits_are_in_the_schema(schema):
    params = {p["name"]: p for p in schema["paths"]["/api/market/series/"]["get"]["parameters"]}
    assert params["sim_time_min"]["schema"]["maximum"] == 1e12 and params["sim_time_max"]["schema"]["minimum"] == -1e12
    key = {p["name"]: p for p in schema["paths"]["/api/jobs/"]["post"]["parameters"]}["Idempotency-Key"]["schema"]
    assert key["maxLength"] == 255 and key["pattern"]
    assert schema["components"]["schemas"]["WorkItemRequest"]["properties"]["tasks"]["minimum"] == 1
    pools = schema["components"]["schemas"]["PatchedPoolSettingsRequest"]["properties"]
    assert pools["reconf_window_s"]["minimum"] == 0.001 and pools["core_budget"]["maximum"] == 2_147_483_647


def test_nullable_references_say_their_type(schema):
    slo = schema["components"]["schemas"]["Job"]["properties"]["slo"]
    assert slo["nullable"] and slo["type"] == "object" and slo["oneOf"][0]["$ref"].endswith("/SloStatus")
    assert slo["oneOf"][1] == {"type": "object", "nullable": True, "enum": [None]}  # null, as OpenAPI 3.0 spells it


def test_quote_prices_are_typed_as_money_strings(schema, alice_api):
    offers = schema["components"]["schemas"]["Quote"]["properties"]["offers"]
    assert {"type": "number"} in offers["items"]["items"]["oneOf"]
    quote = alice_api.post("/api/reservations/quotes/", REQUEST).json()
    assert all(isinstance(s, float) and isinstance(p, str) and p.count(".") == 1 and len(p.split(".")[1]) == 4
               for s, p in quote["offers"] if p is not None)


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/api/jobs/", BID | {"min_utility": False}, "min_utility"),
    ("/api/jobs/", BID | {"name": 7}, "name"),
    ("/api/jobs/", BID | {"work": [{"resource_type": "map", "tasks": True, "task_duration": 30}]}, "work"),
    ("/api/jobs/", BID | {"budget": 10}, "budget"),
    ("/api/deadline/quote/", {"work": BID["work"], "deadline": True}, "deadline"),
])
def test_wrong_json_types_are_field_errors(alice_api, path, body, field):
    answer = alice_api.post(path, body)
    assert answer.status_code == 400 and field in answer.json(), answer.content


def test_a_number_for_a_reason_is_a_field_error(staff):
    api = APIClient()
    api.force_authenticate(staff)
    answer = api.patch("/api/pools/", {"beta": 1.5, "reason": 0})
    assert answer.status_code == 400 and set(answer.json()) == {"reason"}


def test_form_bodies_are_refused(alice):
    answer = APIClient().post("/api/auth/token/", {"username": "alice", "password": "pw-for-tests-1"}, format="multipart")
    assert answer.status_code == 415


def test_accepting_twice_is_a_409_with_the_quote_as_it_is(alice_api):
    quote = alice_api.post("/api/reservations/quotes/", REQUEST).json()
    assert alice_api.post(f"/api/reservations/quotes/{quote['id']}/accept/").status_code == 201
    again = alice_api.post(f"/api/reservations/quotes/{quote['id']}/accept/")
    assert again.status_code == 409
    body = again.json()
    assert set(body) == {"detail", "quote"} and body["quote"]["id"] == quote["id"] and body["quote"]["status"] == "accepted"


def test_accepting_an_expired_quote_is_a_409_with_the_new_quote_and_books_nothing(alice_api, alice):
    quote = alice_api.post("/api/reservations/quotes/", REQUEST).json()
    ReservationQuote.objects.filter(pk=quote["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = alice_api.post(f"/api/reservations/quotes/{quote['id']}/accept/")
    assert answer.status_code == 409, answer.content
    fresh = answer.json()["quote"]
    assert fresh["id"] != quote["id"] and fresh["status"] == "open"
    assert alice_api.get("/api/reservations/").json()["count"] == 0
    assert alice_api.post(f"/api/reservations/quotes/{fresh['id']}/accept/").status_code == 201  # the new one books


def test_a_cura_job_is_created_with_its_location(alice_api, alice, market):
    account_deposit(account=alice.account, amount=Decimal("1000000"), memo="the paper's costs are in the thousands")
    pools_setup_paper(market=market, size=20)
    answer = alice_api.post("/api/cura/jobs/", {"job_type": 3, "deadline_in_s": 2000})
    assert answer.status_code == 201, answer.content
    location = answer["Location"]
    assert location.endswith(f"/api/cura/jobs/{answer.json()['id']}/")
    assert alice_api.get(location).json() == answer.json()


def test_a_deadline_booking_answers_the_whole_quote(alice_api):
    answer = alice_api.post("/api/deadline/book/", {"work": BID["work"], "deadline": 3600})
    assert answer.status_code == 201, answer.content
    assert "curve" in answer.json() and answer.json()["job"]


def test_pool_prices_have_four_places(alice_api, market):
    pools_setup_paper(market=market, size=4)
    pools = alice_api.get("/api/pools/").json()["pools"]
    assert pools and all(len(p["price"].split(".")[1]) == 4 for p in pools)
    assert all(len(repr(p["price_per_slot_second"]).split(".")[-1]) <= 8 for p in pools)


@pytest.mark.parametrize("path", ["/api/no%0Asuch/", "/api/x%0A", "/api/%0A"])
def test_any_api_path_is_a_json_404_in_debug_too(alice_api, path):
    with override_settings(DEBUG=True):
        answer = alice_api.get(path)
    assert answer.status_code == 404 and answer["Content-Type"] == "application/json"
