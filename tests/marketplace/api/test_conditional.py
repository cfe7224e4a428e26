"""The read endpoints pollers hit: ETag / If-None-Match, the shared body cache, the job list's
fast path and the remembered tokens (marketplace.api.conditional, job_list, authentication)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from marketplace.api import conditional
from marketplace.auction.models import WorkItem
from marketplace.auction.serializers import JobSerializer
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.market.models.jobs import Job
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.config import market_configure
from tests.factories import TenantFactory

WORK = [WorkItem("map", 3, 20.0), WorkItem("reduce", 1, 40.0, 2.0)]
POLLED = ["/api/market/", "/api/market/series/", "/api/market/prices/", "/api/market/fairness/",
          "/api/market/allocation/", "/api/jobs/", "/api/jobs/?status=queued"]


def _token_client(tenant) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=tenant.user).key}")
    return client


def _busy_market(alice, bob, market) -> None:  # type: ignore[no-untyped-def]
    for k in range(4):
        bid_submit(tenant=alice, budget=str(5 + k), work=WORK, name=f"a{k}")
        bid_submit(tenant=bob, budget="3", work=WORK[:1], name=f"b{k}")
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=130.0)  # samples; some tasks run and finish


@pytest.mark.parametrize("path", POLLED)
def test_if_none_match_gives_304_until_the_market_changes(alice_api, alice, bob, market, path):
    _busy_market(alice, bob, market)
    first = alice_api.get(path)
    assert first.status_code == 200 and first["ETag"].startswith('"')
    assert "no-cache" in first["Cache-Control"] and "Authorization" in first["Vary"]
    again = alice_api.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again["ETag"] == first["ETag"] and again.content == b""
    assert alice_api.get(path, HTTP_IF_NONE_MATCH='"something-else"').status_code == 200
    cluster_advance(market_id=market.pk, seconds=130.0)  # the clock moves: samples, progress, a new engine version
    bid_submit(tenant=bob, budget="2", work=WORK[:1])
    market_clear(market_id=market.pk)
    changed = alice_api.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]


def test_a_cached_body_is_the_body_the_view_computes(alice_api, alice, bob, market):
    _busy_market(alice, bob, market)
    for path in POLLED:
        computed = alice_api.get(path).content
        conditional.LOCAL.clear()  # the next answer comes from the shared cache (or is computed again)
        from_cache = alice_api.get(path).content
        assert from_cache == computed, path


@pytest.mark.parametrize("path", ["/api/jobs/", "/api/market/allocation/", "/api/market/"])
def test_one_tenants_answer_is_never_served_to_another(alice_api, bob_api, alice, bob, market, path):
    _busy_market(alice, bob, market)
    a = alice_api.get(path)
    b = bob_api.get(path, HTTP_IF_NONE_MATCH=a["ETag"])  # bob presents alice's tag
    if path == "/api/jobs/":
        assert a["ETag"] != b["ETag"] and b.status_code == 200
        assert {j["name"] for j in a.json()["results"]} == {f"a{k}" for k in range(4)}
        assert {j["name"] for j in b.json()["results"]} == {f"b{k}" for k in range(4)}
    elif path == "/api/market/allocation/":
        assert b.status_code == 200 and a["ETag"] != b["ETag"]  # per caller, whatever the rules of who sees what
    else:
        assert b.status_code == 304  # public aggregates: one version, one answer for every tenant


def test_staff_and_tenants_never_share_an_answer(alice_api, alice, bob, market):
    _busy_market(alice, bob, market)
    staff = TenantFactory(market=market, username="operator", deposit=Decimal("1"))
    staff.user.is_staff = True
    staff.user.save(update_fields=["is_staff"])
    staff_api = APIClient()
    staff_api.force_authenticate(staff.user)
    for path in ["/api/market/", "/api/market/series/"]:
        assert staff_api.get(path)["ETag"] != alice_api.get(path)["ETag"]


def test_series_answers_survive_bids_but_not_clearings_or_ticks(alice_api, alice, bob, market):
    _busy_market(alice, bob, market)
    tags = {p: alice_api.get(p)["ETag"] for p in ["/api/market/series/", "/api/market/prices/", "/api/market/"]}
    bid_submit(tenant=bob, budget="2", work=WORK[:1])  # a bid writes no sample and no price
    assert alice_api.get("/api/market/series/", HTTP_IF_NONE_MATCH=tags["/api/market/series/"]).status_code == 304
    assert alice_api.get("/api/market/", HTTP_IF_NONE_MATCH=tags["/api/market/"]).status_code == 200  # job counts moved
    before = alice_api.get("/api/market/prices/").json()["count"]
    market_clear(market_id=market.pk)  # a new cleared version: a price per resource type
    prices = alice_api.get("/api/market/prices/", HTTP_IF_NONE_MATCH=tags["/api/market/prices/"])
    assert prices.status_code == 200 and prices.json()["count"] > before


@pytest.mark.parametrize("path", ["/api/market/series/", "/api/market/fairness/"])
def test_sample_series_survive_clearings_and_follow_ticks(alice_api, alice, bob, market, path):
    """Samples are written by ticks only (services.cluster), so a clearing keeps the tag; a tick
    that writes samples changes it and the body (more samples)."""
    _busy_market(alice, bob, market)
    first = alice_api.get(path)
    bid_submit(tenant=bob, budget="2", work=WORK[:1])
    assert market_clear(market_id=market.pk).status == "cleared"
    assert alice_api.get(path, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    cluster_advance(market_id=market.pk, seconds=130.0)
    after = alice_api.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert after.status_code == 200 and after.json()["count"] > first.json()["count"]


def test_a_configuration_change_without_a_clearing_changes_the_tag(alice_api, alice, bob, market):
    _busy_market(alice, bob, market)
    first = alice_api.get("/api/market/")
    market_configure(market=market, clock_speed=market.clock_speed * 2, reason="test")  # no re-clearing needed
    again = alice_api.get("/api/market/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200 and again.json()["clock_speed"] == market.clock_speed * 2


def test_a_cancel_changes_the_job_list(alice_api, alice, bob, market):
    _busy_market(alice, bob, market)
    job = bid_submit(tenant=alice, budget="1", work=WORK[:1], name="to-cancel")
    first = alice_api.get("/api/jobs/")
    assert first.json()["results"][0]["status"] == "queued"
    job_cancel(job=job)
    after = alice_api.get("/api/jobs/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert after.status_code == 200 and after.json()["results"][0]["status"] == "cancelled"


def test_the_job_list_is_the_serializers_output(alice_api, alice, bob, market):
    """Oracle: the fast path's JSON equals JobSerializer's for jobs queued, running, finished,
    cancelled and with an SLO, on both pages."""
    for k in range(55):
        bid_submit(tenant=alice, budget=str(Decimal("0.3001") * (k + 1)), work=WORK if k % 2 else WORK[:1], name=f"j{k}",
                   utility="log" if k % 3 == 0 else "linear", min_utility=(-0.5 if k % 3 == 0 else 0.2) if k % 5 == 0 else None)
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=90.0)
    job_cancel(job=Job.objects.filter(tenant=alice, status__in=Job.ACTIVE).order_by("id").last())
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=400.0)
    assert {j.status for j in Job.objects.filter(tenant=alice)} >= {"finished", "cancelled"}
    from marketplace.auction.selectors import slo_status
    from marketplace.ledger.selectors import job_money
    from marketplace.market import selectors

    for page in (1, 2):
        got = alice_api.get(f"/api/jobs/?page={page}").json()
        jobs = list(selectors.tenant_jobs(tenant=alice)[(page - 1) * 50: page * 50])
        ctx = {"shares": selectors.current_shares(market=market), "queue_paths": selectors.queue_paths(market=market),
               "money": job_money(job_ids=[j.pk for j in jobs]),
               "slo": slo_status(market=market, jobs=[j for j in jobs if j.min_utility is not None])}
        expected = JobSerializer(jobs, many=True, context=ctx).data
        assert got["results"] == [dict(e) for e in expected]
        assert got["count"] == 55 and len(got["results"]) == (50 if page == 1 else 5)


def _serializer_json(job: Job, market) -> dict:  # type: ignore[no-untyped-def]
    from marketplace.auction.selectors import slo_status
    from marketplace.ledger.selectors import job_money
    from marketplace.market import selectors

    job = selectors.tenant_jobs(tenant=job.tenant).get(pk=job.pk)
    ctx = {"shares": selectors.current_shares(market=market), "queue_paths": selectors.queue_paths(market=market),
           "money": job_money(job_ids=[job.pk]),
           "slo": slo_status(market=market, jobs=[job] if job.min_utility is not None else [])}
    return dict(JobSerializer(job, context=ctx).data)


@pytest.mark.parametrize("extra", [{}, {"min_utility": -0.5, "utility": "log"}, {"budget": "0.3001"}], ids=["plain", "slo", "odd budget"])
def test_a_bid_and_a_cancellation_answer_the_serializers_output(alice_api, alice, market, extra):
    """Oracle: the answer to POST /api/jobs/ (built from the objects the bid wrote, not read back)
    and to its cancellation (read back) equal JobSerializer's JSON of the job read from the database
    right after; work rows given in reverse stage order come back in stage order."""
    body = {"name": "oracle", "budget": "12.5", "utility": "linear",
            "work": [{"resource_type": "reduce", "tasks": 2, "task_duration": 30, "weight": 2.0},
                     {"resource_type": "map", "tasks": 8, "task_duration": 12.5, "weight": 1.0}]} | extra
    placed = alice_api.post("/api/jobs/", body, format="json")
    assert placed.status_code == 201, placed.content
    job = Job.objects.get(pk=placed.json()["id"])
    assert placed.json() == _serializer_json(job, market)
    assert [w["resource_type"] for w in placed.json()["work"]] == ["map", "reduce"]
    cancelled = alice_api.post(f"/api/jobs/{job.pk}/cancel/", format="json")
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["status"] == "cancelled" and cancelled.json() == _serializer_json(job, market)


def test_a_remembered_token_costs_no_query_and_a_deleted_one_is_refused(alice, market):
    api = _token_client(alice)
    assert api.get("/api/account/").status_code == 200
    with CaptureQueriesContext(connection) as ctx:
        assert api.get("/api/account/").status_code == 200
    assert not any("authtoken_token" in q["sql"] or "marketplace_tenant" in q["sql"] for q in ctx.captured_queries)
    Token.objects.filter(user=alice.user).delete()
    assert api.get("/api/account/").status_code in (401, 403)


def test_requests_get_their_own_user_objects(alice, market):
    api = _token_client(alice)
    from marketplace.api.authentication import _REMEMBERED, ExpiringTokenAuthentication

    assert api.get("/api/account/").status_code == 200
    key = next(iter(_REMEMBERED))
    auth = ExpiringTokenAuthentication()
    user1, _ = auth.authenticate_credentials(key)
    user1.first_name = "changed by a request"
    user1.tenant.name = "changed too"
    user2, _ = auth.authenticate_credentials(key)
    assert user2 is not user1 and user2.first_name != "changed by a request" and user2.tenant.name != "changed too"


def test_the_allocation_is_the_serializers_output(alice_api, alice, bob, market):
    """Oracle: the allocation's entries equal AllocationEntrySerializer's, built here from model
    instances (every active job, its units and pending tasks per type, its latest shares)."""
    from marketplace.dashboard.serializers import AllocationEntrySerializer
    from marketplace.market import selectors
    from marketplace.market.models.jobs import JobWork

    for k in range(4):
        bid_submit(tenant=alice, budget=str(5 + k), work=WORK, name=f"a{k}")
        bid_submit(tenant=bob, budget="3", work=WORK[:1], name=f"b{k}")
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=10.0)  # tasks running, none finished
    bid_submit(tenant=bob, budget="4", work=WORK, name="late")  # active, in no clearing yet: no shares
    got = alice_api.get("/api/market/allocation/").json()["jobs"]
    shares = selectors.current_shares(market=market)
    paths = selectors.queue_paths(market=market)
    expected = []
    # a tenant sees its own jobs (market.visibility)
    for job in Job.objects.filter(market=market, tenant=alice, status__in=Job.ACTIVE).select_related("tenant").order_by("id"):
        works = list(JobWork.objects.filter(job=job).select_related("resource_type"))
        expected.append({"job_id": job.pk, "tenant": job.tenant.name, "queue": paths[job.queue_id], "status": job.status,
                         "running": {w.resource_type.name: w.running for w in works},
                         "pending": {w.resource_type.name: w.pending for w in works}, "shares": shares.get(job.pk, {})})
    assert len(expected) >= 3 and any(e["running"] and any(e["running"].values()) for e in expected)
    assert got == [dict(e) for e in AllocationEntrySerializer(expected, many=True).data]


def test_a_tenant_of_a_second_market_is_tagged_by_that_market(alice_api, alice, market):
    from tests.factories import MarketFactory

    other = MarketFactory(name="second")
    carol = TenantFactory(market=other, username="carol", deposit=Decimal("100"))
    carol_api = APIClient()
    carol_api.force_authenticate(carol.user)
    bid_submit(tenant=alice, budget="1", work=WORK[:1])
    first = carol_api.get("/api/jobs/")
    assert first.status_code == 200 and first.json()["count"] == 0
    bid_submit(tenant=carol, budget="1", work=WORK[:1])  # only the second market changes
    again = carol_api.get("/api/jobs/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200 and again.json()["count"] == 1


def test_the_pages_pollers_revalidate_with_their_etag(alice, bob, market):  # type: ignore[no-untyped-def]
    """The dashboard's poller (README, "API"): an ETag, a 304 while nothing changed, and a new
    body (and tag) once the market moved; the browser keeps it and always revalidates."""
    from django.test import Client

    client = Client()
    client.force_login(alice.user)
    first = client.get("/dashboard/data.json")
    tag = first["ETag"]
    assert first.status_code == 200 and tag and "no-cache" in first["Cache-Control"] and "private" in first["Cache-Control"]
    again = client.get("/dashboard/data.json", HTTP_IF_NONE_MATCH=tag)
    assert again.status_code == 304 and not again.content
    bid_submit(tenant=bob, budget="5", work=WORK, name="b")
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=10.0)  # the clock in the headline moves, the shares change
    moved = client.get("/dashboard/data.json", HTTP_IF_NONE_MATCH=tag)
    assert moved.status_code == 200 and moved["ETag"] != tag and moved.json()["headline"] != first.json()["headline"]


@pytest.mark.parametrize("deposit", ["0", "12.5", "1000000000.0001"])
def test_the_account_is_the_serializers_output(db, deposit):  # type: ignore[no-untyped-def]
    """Oracle: the balance equals AccountSerializer's rendering of the account, byte for byte."""
    from django.conf import settings
    from rest_framework.renderers import JSONRenderer

    from marketplace.dashboard.serializers import AccountSerializer
    from marketplace.ledger.models import Account
    from tests.factories import MarketFactory

    tenant = TenantFactory(market=MarketFactory(name="acct"), username="payer", deposit=Decimal(deposit))
    client = APIClient()
    client.force_authenticate(tenant.user)
    if Decimal(deposit) > 0:
        bid_submit(tenant=tenant, budget="0.0001", work=WORK[:1])  # something held
    account = Account.objects.get(tenant=tenant)
    body = {"tenant": tenant.name, "currency": settings.MARKET_CURRENCY, "available": account.available, "held": account.held}
    assert client.get("/api/account/").content == JSONRenderer().render(AccountSerializer(body).data)


def test_a_token_read_in_one_statement_equals_the_orms_select_related(alice, market):  # type: ignore[no-untyped-def]
    """Oracle: ``_read_token`` against the ORM's select_related query it replaces, for a tenant, a cluster
    manager without a tenant, a superuser and a user in another group: the same rows, caches and role."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db.models import Exists, OuterRef

    from marketplace.api.authentication import _read_token
    from marketplace.market import roles

    User = get_user_model()
    manager = User.objects.create_user(username="cm", password="pw-x-1234")
    manager.groups.add(Group.objects.get_or_create(name=roles.CLUSTER_MANAGER)[0])
    root = User.objects.create_superuser(username="root", password="pw-x-1234", email="r@example.org")
    other = User.objects.create_user(username="other", password="pw-x-1234", first_name="Ö", is_active=False)
    other.groups.add(Group.objects.get_or_create(name="somebody-else")[0])
    orm = Token.objects.select_related("user", "user__tenant").annotate(
        cluster_manager=Exists(Group.objects.filter(name=roles.CLUSTER_MANAGER, user=OuterRef("user_id"))))

    def fields(obj):  # type: ignore[no-untyped-def]
        return None if obj is None else {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}

    for user in (alice.user, manager, root, other):
        key = Token.objects.create(user=user).key
        got, want = _read_token(key), orm.get(key=key)
        assert fields(got) == fields(want) and fields(got.user) == fields(want.user)
        assert got.cluster_manager == want.cluster_manager == (user == manager)
        got_tenant, want_tenant = getattr(got.user, "tenant", None), getattr(want.user, "tenant", None)
        assert fields(got_tenant) == fields(want_tenant)
        assert (got_tenant is None) == (user != alice.user)
        assert set(got._state.fields_cache) == set(want._state.fields_cache) == {"user"}
        assert set(got.user._state.fields_cache) == set(want.user._state.fields_cache)
        assert got.user.auth_token is got and (got_tenant is None or got_tenant.user is got.user)
        assert not got._state.adding and got._state.db == want._state.db
    with pytest.raises(Token.DoesNotExist):
        _read_token("no-such-key")
