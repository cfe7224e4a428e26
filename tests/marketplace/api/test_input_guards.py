"""No 500 from any input: NUL bytes, deep nesting, oversize bodies, lenient digits, debug pages.

Each bad input gets a 4xx JSON answer naming the field (or ``body``/the query
parameter) and writes nothing.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.test import RequestFactory

from marketplace.api.parsers import MAX_JSON_DEPTH, json_depth_exceeds
from marketplace.auction.forms import BidForm
from marketplace.auction.services import parse_budget
from marketplace.ledger.models import LedgerEntry
from marketplace.market.models.jobs import Job
from marketplace.market.validation import parse_decimal_strict

# Service URLs with credentials for the debug-page test (up here, far from the frame that
# raises: the debug page quotes a few source lines around each frame).
PG_URL = "postgres://app:pg-s3cret@10.0.0.8:5432/market"
REDIS_URL = "redis://:redis-s3cret@10.0.0.9:6379/0"
GOOD = {"name": "wc", "budget": "10", "utility": "linear",
        "work": [{"resource_type": "map", "tasks": 2, "task_duration": 5.0, "weight": 1.0}]}


def _nothing_written(before: tuple[int, int]) -> bool:
    return (Job.objects.count(), LedgerEntry.objects.count()) == before


@pytest.fixture
def counts(alice) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    return Job.objects.count(), LedgerEntry.objects.count()


@pytest.mark.parametrize("path", ["/api/market/series/", "/api/market/fairness/", "/api/market/prices/", "/api/jobs/"])
def test_null_byte_in_a_query_parameter_is_a_400_naming_it(alice_api, path):
    resp = alice_api.get(path + "?resource=%00&page=1")
    assert resp.status_code == 400
    assert resp.json() == {"resource": ["Null characters are not allowed."]}


def test_null_byte_in_a_page_query_is_refused_too(client, alice):
    client.force_login(alice.user)
    resp = client.get("/jobs/?status=a%00b")
    assert resp.status_code == 400 and "status" in resp.json()


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_deeply_nested_bid_is_a_400_naming_the_body(alice_api, counts, depth):
    raw = '{"budget": "1", "work": ' + "[" * depth + "]" * depth + "}"
    assert depth < sys.getrecursionlimit() or len(raw) > 100_000  # the deep case really exceeds the recursion limit
    resp = alice_api.post("/api/jobs/", raw, content_type="application/json")
    assert resp.status_code == 400, resp.content
    assert "body" in resp.json()
    assert _nothing_written(counts)


def test_depth_check_is_exact():
    nested: object = 1
    for _ in range(MAX_JSON_DEPTH):
        nested = [nested]
    assert not json_depth_exceeds(nested)
    assert json_depth_exceeds([nested])
    assert json_depth_exceeds({"a": [nested]})


def test_oversize_body_is_a_413_json_error(alice_api, counts, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    body = dict(GOOD, name="x" * 5000)
    resp = alice_api.post("/api/jobs/", json.dumps(body), content_type="application/json")
    assert resp.status_code == 413
    assert resp["Content-Type"] == "application/json" and "body" in resp.json()
    assert _nothing_written(counts)


def test_oversize_form_post_is_a_413_json_error_too(client, alice, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    client.force_login(alice.user)
    resp = client.post("/bid/", {"name": "x" * 5000, "budget": "1"})
    assert resp.status_code == 413 and "body" in resp.json()


def test_chunked_body_without_content_length_is_a_411_not_an_empty_bid(alice_api, counts):
    # Django reads Content-Length bytes of a WSGI body: a chunked one would arrive empty
    resp = alice_api.post("/api/jobs/", json.dumps(GOOD), content_type="application/json",
                          HTTP_TRANSFER_ENCODING="chunked", CONTENT_LENGTH="")
    assert resp.status_code == 411
    assert resp["Content-Type"] == "application/json" and "Content-Length" in resp.json()["body"][0]
    assert _nothing_written(counts)
    assert alice_api.post("/api/jobs/", json.dumps(GOOD), content_type="application/json").status_code == 201  # with a length: placed


LENIENT = ["١٢", "1_000", " 5 ", "5 ", "\t5", "1e3", "NaN", "Infinity", "-Infinity", "0x10", "+5", "\u0665", "\uff11\uff12", "", "5.", ".5"]


@pytest.mark.parametrize("text", LENIENT)
def test_strict_decimal_refuses_what_decimal_accepts(text):
    with pytest.raises(ValidationError):
        parse_decimal_strict(text)


@pytest.mark.parametrize("value,expected", [("12", "12"), ("0.0001", "0.0001"), ("-3.5", "-3.5"), (7, "7"), (0.1, "0.1")])
def test_strict_decimal_parses_plain_numbers(value, expected):
    assert parse_decimal_strict(value) == Decimal(expected)


@pytest.mark.parametrize("text", ["١٢", "1_000", " 5 "])
def test_api_refuses_odd_digits_as_a_budget_field_error(alice_api, counts, text):
    resp = alice_api.post("/api/jobs/", json.dumps(dict(GOOD, budget=text)), content_type="application/json")
    assert resp.status_code == 400 and "budget" in resp.json()
    assert _nothing_written(counts)


@pytest.mark.parametrize("text", ["١٢", "1_000", " 5 "])
def test_service_and_form_refuse_odd_digits(alice, text):
    with pytest.raises(ValidationError) as exc:
        parse_budget(text)
    assert "budget" in exc.value.message_dict
    form = BidForm({"budget": text, "utility": "linear", "map_tasks": 1, "map_duration": 1, "map_weight": 1,
                    "reduce_tasks": 0, "reduce_duration": 1, "reduce_weight": 1}, resource_types=alice.market.resource_types.all())
    assert not form.is_valid() and "budget" in form.errors


def _debug_page(request) -> str:  # type: ignore[no-untyped-def]
    from django.views.debug import technical_500_response

    try:
        raise RuntimeError("boom")
    except RuntimeError:
        return technical_500_response(request, *sys.exc_info()).content.decode()


def test_debug_error_page_hides_service_urls(settings):
    # given the services' URLs in the settings and (as under runserver) in request.META
    settings.DEBUG = True
    settings.REDIS_URL = settings.CELERY_BROKER_URL = REDIS_URL
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": REDIS_URL}}
    request = RequestFactory().get("/boom/")
    request.META["DATABASE_URL"], request.META["REDIS_URL"] = PG_URL, REDIS_URL
    # when the debug page renders an error
    page = _debug_page(request)
    # then neither URL (nor its credentials) is on it
    assert "boom" in page and "REDIS_URL" in page  # it is the debug page, listing the names
    for secret in ("pg-s3cret", "redis-s3cret", "10.0.0.8", "10.0.0.9"):
        assert secret not in page


def test_api_404s_are_json_even_outside_the_router(alice_api, client):
    resp = alice_api.get("/api/jobs/not-a-number/")
    assert resp.status_code == 404 and resp.json() == {"detail": "Not found."}
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("body", ["[]", '"x"', "5", "null", "true"])
@pytest.mark.parametrize("path", ["/api/auth/token/", "/api/jobs/", "/api/bids/preview/"])
def test_a_json_body_that_is_not_an_object_is_a_400_json_answer(alice_api, counts, path, body):
    # the attack: these bodies parsed, and the views indexed them (500, an HTML page under /api/)
    resp = alice_api.post(path, data=body, content_type="application/json")
    assert resp.status_code == 400 and resp["Content-Type"].startswith("application/json")
    assert "Expected a JSON object" in resp.json()["body"][0]
    assert _nothing_written(counts)


@pytest.mark.parametrize("alpha_err", [1e-320, 5e-324, 1e-4])
def test_an_estimate_range_too_wide_is_a_field_error_not_a_500(alice_api, alpha_err):
    body = {"deadline": 900, "alpha_err": alpha_err, "beta_err": 1.0,
            "work": [{"resource_type": "map", "tasks": 2, "task_duration": 5.0}]}
    for path in ("/api/deadline/quote/", "/api/deadline/book/"):
        resp = alice_api.post(path, data=body, format="json")
        assert resp.status_code == 400 and "alpha_err" in resp.json(), (path, resp.content[:200])
