"""A client generated from ``/api/schema/`` (openapi-python-client, pinned in requirements.txt)
runs a tenant's workflow against a live server: token, bid, poll (with ETag / 304), cancel,
reservation quote, accept, accept again (409), deadline booking, rates, and a staff change of
alpha. Every call is strict (``raise_on_unexpected_status``): an undocumented status fails,
and every answer is parsed into the schema's models (a missing required field fails).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model

from marketplace.web import throttling
from tests.factories import MarketFactory, TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pw-for-tests-1"
PACKAGE = "market_client"


@pytest.fixture
def client_package(live_server, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """The market, alice (a tenant) and ops (staff), then the client generated from the live schema."""
    for cls in (throttling.UserRateThrottle, throttling.AnonRateThrottle, throttling.WriteRateThrottle):
        monkeypatch.setattr(cls, "THROTTLE_RATES", {"user": "100000/min", "anon": "100000/min", "writes": "100000/min"})
    market = MarketFactory(name="client")
    TenantFactory(market=market, username="alice", deposit=Decimal("100000"))
    get_user_model().objects.create_user("ops", password=PASSWORD, is_staff=True)
    schema = httpx.get(f"{live_server.url}/api/schema/?format=json", timeout=30).json()
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    bin_dir = Path(sys.executable).parent
    env = os.environ | {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}  # its post-hook runs ruff
    done = subprocess.run([str(bin_dir / "openapi-python-client"), "generate", "--path", str(tmp_path / "schema.json"),
                           "--meta", "none", "--output-path", str(tmp_path / PACKAGE)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr  # nothing of the schema was skipped
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    yield schema, live_server.url
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def _module(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


def _login(base_url: str, username: str, prefix: str) -> Any:
    token_create = _module("api.auth.auth_token_create")
    models = _module("models")
    client_mod = _module("client")
    anonymous = client_mod.Client(base_url=base_url, raise_on_unexpected_status=True)
    got = token_create.sync(client=anonymous, body=models.LoginRequest(username=username, password=PASSWORD))
    assert isinstance(got, models.TokenOut), got
    return client_mod.AuthenticatedClient(base_url=base_url, token=got.token, prefix=prefix, raise_on_unexpected_status=True)


def test_the_generated_client_runs_a_tenants_workflow(client_package):  # type: ignore[no-untyped-def]
    schema, base_url = client_package
    scheme = schema["components"]["securitySchemes"]["tokenAuth"]
    prefix = scheme["x-token-prefix"]
    assert prefix == "Token" and "Token <key>" in scheme["description"]
    models = _module("models")
    alice = _login(base_url, "alice", prefix)
    work = [models.WorkItemRequest(resource_type=models.WorkItemRequestResourceType("map"), tasks=4, task_duration=30.0)]

    # bid: 201 with Location, the job parsed
    jobs_create = _module("api.jobs.jobs_create")
    placed = jobs_create.sync_detailed(client=alice, body=models.BidRequest(budget="25.5", work=work, name="wordcount"))
    assert placed.status_code == 201 and isinstance(placed.parsed, models.Job)
    job = placed.parsed
    assert placed.headers["Location"].endswith(f"/api/jobs/{job.id}/") and job.budget == "25.5000"

    # poll: the job, and the list with its ETag (304 when nothing changed)
    job_again = _module("api.jobs.jobs_retrieve").sync(job.id, client=alice)
    assert isinstance(job_again, models.Job) and job_again.id == job.id
    jobs_list = _module("api.jobs.jobs_list")
    listed = jobs_list.sync_detailed(client=alice)
    assert listed.status_code == 200 and [j.id for j in listed.parsed.results] == [job.id]
    unchanged = jobs_list.sync_detailed(client=alice, if_none_match=listed.headers["ETag"])
    assert unchanged.status_code == 304 and unchanged.parsed is None

    # cancel
    cancelled = _module("api.jobs.jobs_cancel_create").sync(job.id, client=alice)
    assert isinstance(cancelled, models.Job) and cancelled.status.value == "cancelled"

    # reservation quote, accept (201 with the reservation), accept again (409 in the documented shape)
    quote = _module("api.reservations.reservations_quotes_create").sync(
        client=alice, body=models.RequestRequest(resource_type=models.RequestRequestResourceType("map"), units=2, duration=600.0,
                                         arrival=0.0, deadline=7200.0))
    assert isinstance(quote, models.Quote) and quote.status.value == "open"
    assert all(isinstance(start, float) and (price is None or isinstance(price, str)) for start, price in quote.offers)
    accept = _module("api.reservations.reservations_quotes_accept_create")
    booked = accept.sync_detailed(quote.id, client=alice)
    assert booked.status_code == 201 and isinstance(booked.parsed, models.Reservation), booked.content
    assert booked.parsed.quote == quote.id and booked.headers["Location"].endswith(f"/api/reservations/{booked.parsed.id}/")
    again = accept.sync_detailed(quote.id, client=alice)
    assert again.status_code == 409 and isinstance(again.parsed, models.QuoteConflict), again.content
    assert again.parsed.quote.id == quote.id and again.parsed.quote.status.value == "accepted" and again.parsed.detail

    # deadline booking: 201, the whole quote (curve included) and the job
    book = _module("api.deadline.deadline_book_create").sync_detailed(
        client=alice, body=models.DeadlineBookRequest(work=work, deadline=3600.0, name="report"))
    assert book.status_code == 201 and isinstance(book.parsed, models.DeadlineBookOut), book.content
    assert book.parsed.feasible and isinstance(book.parsed.curve, list)
    assert book.headers["Location"].endswith(f"/api/jobs/{book.parsed.job}/")

    # rates
    rates = _module("api.market.market_rates_list").sync(client=alice)
    assert isinstance(rates, models.PaginatedRateSampleList)

    # staff: alpha
    ops = _login(base_url, "ops", prefix)
    state = _module("api.market.market_partial_update").sync(
        client=ops, body=models.PatchedMarketConfigRequest(alpha=0.5, reason="client test"))
    assert isinstance(state, models.MarketState) and state.alpha == 0.5


def test_the_generators_default_bearer_prefix_is_refused(client_package):  # type: ignore[no-untyped-def]
    _schema, base_url = client_package
    bearer = _login(base_url, "alice", "Bearer")  # openapi-python-client's default: the scheme says Token
    answer = _module("api.account.account_retrieve").sync_detailed(client=bearer)
    assert answer.status_code == 401 and answer.headers["WWW-Authenticate"].startswith("Token")
