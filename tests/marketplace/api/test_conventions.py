"""API conventions: 401 with WWW-Authenticate, page_size and ordering with limits, the
series' simulated-time filters and latest view, 400 for unknown values, one money format,
and a schema in which every field has a description with its unit."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from marketplace.api.conventions import MAX_PAGE_SIZE
from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.market.models.allocation import PriceSample
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance

MONEY = re.compile(r"^-?[0-9]+\.[0-9]{4}$")


def _bid(tenant, name="job", budget="25", tasks=4):  # type: ignore[no-untyped-def]
    return bid_submit(tenant=tenant, budget=Decimal(budget), work=[WorkItem("map", tasks, 300.0, 1.0)], utility="linear",
                      name=name, user=tenant.user)


@pytest.fixture
def history(market, alice):  # type: ignore[no-untyped-def]
    """Given a market with a few clearings and samples at distinct simulated times."""
    for k in range(3):
        _bid(alice, name=f"j{k}")
        market_clear(market_id=market.pk)
        cluster_advance(market_id=market.pk, seconds=90)
    assert PriceSample.objects.values("sim_time").distinct().count() >= 2
    return market


@pytest.mark.parametrize("path", ["/api/jobs/", "/api/market/", "/api/account/", "/api/market/prices/", "/api/staff/jobs/"])
def test_missing_or_bad_credentials_are_401_with_a_challenge(market, path) -> None:  # type: ignore[no-untyped-def]
    for headers in ({}, {"HTTP_AUTHORIZATION": "Token not-a-real-token"}):
        response = APIClient().get(path, **headers)
        assert response.status_code == 401, (path, headers, response.status_code)
        assert response["WWW-Authenticate"] == "Token"


def test_a_session_and_a_token_still_authenticate(alice) -> None:  # type: ignore[no-untyped-def]
    session = APIClient()
    session.force_login(alice.user)
    assert session.get("/api/account/").status_code == 200
    token = Token.objects.create(user=alice.user).key
    assert APIClient().get("/api/account/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200


def test_page_size_within_limits_and_400_outside(history, alice_api) -> None:  # type: ignore[no-untyped-def]
    total = alice_api.get("/api/market/fairness/").json()["count"]
    assert total > 2
    page = alice_api.get("/api/market/fairness/?page_size=2").json()
    assert len(page["results"]) == 2 and page["count"] == total
    assert len(alice_api.get(f"/api/market/fairness/?page_size={MAX_PAGE_SIZE}").json()["results"]) == min(total, MAX_PAGE_SIZE)
    for bad in ("0", str(MAX_PAGE_SIZE + 1), "ten", "-1"):
        response = alice_api.get(f"/api/market/fairness/?page_size={bad}")
        assert response.status_code == 400 and "page_size" in response.json()


def test_ordering_sorts_and_unknown_fields_are_400(history, alice_api) -> None:  # type: ignore[no-untyped-def]
    budgets = [Decimal(j["budget"]) for j in alice_api.get("/api/jobs/?ordering=budget").json()["results"]]
    assert budgets == sorted(budgets)
    ids = [j["id"] for j in alice_api.get("/api/jobs/?ordering=-id").json()["results"]]
    assert ids == sorted(ids, reverse=True)
    for bad in ("tenant", "-password", "budget,nope", ""):
        response = alice_api.get(f"/api/jobs/?ordering={bad}")
        assert response.status_code == 400 and "ordering" in response.json(), bad
    assert alice_api.get("/api/market/prices/?ordering=price").status_code == 400  # only sim_time on the series


def test_the_latest_price_is_one_request_away(history, alice_api) -> None:  # type: ignore[no-untyped-def]
    newest = max(PriceSample.objects.values_list("sim_time", flat=True))
    latest = alice_api.get("/api/market/prices/?latest=true").json()["results"]
    assert latest and {r["sim_time"] for r in latest} == {newest}
    assert {r["resource_type"] for r in latest} == {"map", "reduce"}
    first = alice_api.get("/api/market/prices/?ordering=-sim_time&page_size=1").json()["results"][0]
    assert first["sim_time"] == newest
    mapped = alice_api.get("/api/market/prices/?latest=true&resource=map").json()["results"]
    assert [r["resource_type"] for r in mapped] == ["map"]


def test_simulated_time_window_filters_the_series(history, alice_api) -> None:  # type: ignore[no-untyped-def]
    times = sorted(set(PriceSample.objects.values_list("sim_time", flat=True)))
    lo, hi = times[0], times[-1]
    inside = alice_api.get(f"/api/market/prices/?sim_time_min={hi}&page_size=500").json()["results"]
    assert inside and all(r["sim_time"] >= hi for r in inside)
    before = alice_api.get(f"/api/market/fairness/?sim_time_max={lo}&page_size=500").json()["results"]
    assert all(r["sim_time"] <= lo for r in before)
    assert alice_api.get("/api/market/series/?sim_time_min=1e9").json()["count"] == 0  # a valid window may be empty


@pytest.mark.parametrize(("query", "field"), [
    ("/api/market/prices/?resource=gpu", "resource"), ("/api/market/fairness/?resource=MAP", "resource"),
    ("/api/market/series/?latest=yes", "latest"), ("/api/market/prices/?sim_time_min=soon", "sim_time_min"),
    ("/api/market/prices/?sim_time_max=1e300", "sim_time_max"), ("/api/market/prices/?sim_time_min=NaN", "sim_time_min"),
    ("/api/jobs/?status=lost", "status"), ("/api/jobs/?utility=cubic", "utility"), ("/api/account/ledger/?kind=gift", "kind"),
])
def test_unknown_filter_values_are_400_naming_the_field(history, alice_api, query, field) -> None:  # type: ignore[no-untyped-def]
    response = alice_api.get(query)
    assert response.status_code == 400 and field in response.json(), (query, response.status_code, response.json())


def test_amounts_are_decimal_strings_with_four_places(history, alice_api) -> None:  # type: ignore[no-untyped-def]
    job = alice_api.get("/api/jobs/").json()["results"][0]
    account = alice_api.get("/api/account/").json()
    entry = alice_api.get("/api/account/ledger/").json()["results"][0]
    amounts = [job["budget"], job["charged"], job["held"], account["available"], account["held"],
               *(entry[k] for k in ("amount", "available_delta", "held_delta", "available_after", "held_after"))]
    assert all(isinstance(a, str) and MONEY.match(a) for a in amounts), amounts
    assert account["currency"] == "credits"
    price = alice_api.get("/api/market/prices/?latest=true").json()["results"][0]["price"]
    assert isinstance(price, float)  # a rate, not an amount


def test_every_schema_field_is_described_and_says_its_unit(market, alice_api, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MARKET_CURRENCY = "tokens"
    schema = alice_api.get("/api/schema/?format=json").json()
    bare, money_without_currency, times_without_clock = [], [], []
    for name, component in schema["components"]["schemas"].items():
        for prop, spec in component.get("properties", {}).items():
            text = spec.get("description", "")
            if not text:  # enum and nested references too (a reference is wrapped in allOf to carry one)
                bare.append(f"{name}.{prop}")
            if "$ref" in spec or "allOf" in spec:
                continue
            if spec.get("format") == "decimal" and "tokens" not in text:
                money_without_currency.append(f"{name}.{prop}")
            if prop.startswith("sim_") and "imulated" not in text:
                times_without_clock.append(f"{name}.{prop}")
    assert not bare and not money_without_currency and not times_without_clock, (bare, money_without_currency, times_without_clock)
    assert "PriceSample" in schema["components"]["schemas"]
    assert "tokens per slot" in schema["components"]["schemas"]["PriceSample"]["properties"]["price"]["description"]
    prices = schema["paths"]["/api/market/prices/"]["get"]
    names = {p["name"] for p in prices["parameters"]}
    assert {"page", "page_size", "ordering", "resource", "sim_time_min", "sim_time_max", "latest"} <= names
    assert {"400", "401", "403", "404"} <= set(prices["responses"])
    assert "WWW-Authenticate" in prices["responses"]["401"]["headers"]
