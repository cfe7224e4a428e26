"""Every route, every role: who may open it, and no tenant reads another tenant's jobs.

The routes come from Django's URL resolver, so a route added without a rule in ``RULES``
fails ``test_every_route_has_a_rule``. Each rule gives the status of a GET for the five
actors: anonymous, two tenants (alice owns the objects in the URLs, bob does not), staff
(not a tenant) and a cluster manager (not staff, not a tenant). Then every answer bob and
the anonymous client get is searched for alice's job name and tenant name (the privacy
tiers of ``marketplace.market.visibility``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.ledger.services import account_deposit
from marketplace.market.roles import CLUSTER_MANAGER
from marketplace.market.services.clearing import market_clear
from marketplace.pools.services.jobs import cura_job_submit
from marketplace.pools.services.pools import pools_setup_paper
from marketplace.reservations.services import reservation_accept, reservation_quote

ACTORS = ("anon", "alice", "bob", "staff", "manager")
SECRET = "alice-secret-pipeline"  # alice's job name: no one but alice, staff and managers may read it


@dataclass(frozen=True)
class Rule:
    """Expected status of a GET per actor; ``why`` says what the rule protects; ``writes``:
    per method (an empty body), the status for the actors who must be refused (the allowed
    ones are left out: their write would change the world the next rows read)."""

    statuses: dict[str, int]
    why: str
    writes: dict[str, dict[str, int]] = field(default_factory=dict)

    def refusing(self, method: str, **statuses: int) -> Rule:
        return replace(self, writes=self.writes | {method: statuses})


def _rule(why: str, anon: int, alice: int, bob: int, staff: int, manager: int) -> Rule:
    return Rule(dict(zip(ACTORS, (anon, alice, bob, staff, manager), strict=True)), why)


NON_TENANT_WRITE = {"anon": 401, "staff": 403, "manager": 403}
NOT_ALICES_WRITE = {"anon": 401, "bob": 404, "staff": 403, "manager": 403}


# Pages (HTML): anonymous users are sent to the log-in page (302).
PAGE_PUBLIC = _rule("public market data for any logged-in user", 302, 200, 200, 200, 200)
PAGE_TENANT = _rule("a tenant's own page; others are not tenants (403)", 302, 200, 200, 403, 403)
PAGE_OWN = _rule("alice's object: bob gets 404 (ids are no oracle), non-tenants 403", 302, 200, 404, 403, 403)
PAGE_STAFF = _rule("staff only", 302, 403, 403, 200, 403)
# JSON under the pages (the dashboard's and the lab's pollers): 401 without a session.
PAGE_JSON_PUBLIC = _rule("public data for the dashboard's script (401 when the session ends)", 401, 200, 200, 200, 200)
PAGE_LOGGED_IN_JSON = _rule("public data for the lab pages' pollers", 302, 200, 200, 200, 200)
# The API: 401 with WWW-Authenticate without credentials.
API_PUBLIC = _rule("public market data (aggregates, prices, fairness per queue)", 401, 200, 200, 200, 200)
API_TENANT = _rule("the caller's own data; non-tenants 403", 401, 200, 200, 403, 403)
API_OWN = _rule("alice's object: bob gets 404, non-tenants 403", 401, 200, 404, 403, 403)
API_ALL_TENANTS = _rule("every tenant's jobs: staff and cluster managers", 401, 403, 403, 200, 200)
API_MANAGER = _rule("the cluster interface (paper 001 Sec. 2.3.2): cluster managers", 401, 403, 403, 403, 200)
API_POST_TENANT = _rule("a tenant's POST; GET is not allowed", 401, 405, 405, 405, 405).refusing("post", **NON_TENANT_WRITE)
API_POST_OWN = _rule("a POST on alice's object; GET is not allowed", 401, 405, 405, 405, 405).refusing("post", **NOT_ALICES_WRITE)
API_POST_STAFF = _rule("a staff POST; GET is not allowed", 401, 403, 403, 405, 403).refusing(
    "post", anon=401, alice=403, bob=403, staff=400, manager=403)  # staff: the empty body's field errors
API_POST_MANAGER = _rule("a cluster manager's POST; GET is not allowed", 401, 403, 403, 403, 405).refusing(
    "post", anon=401, alice=403, bob=403, staff=403)
API_DOCS = _rule("the API's schema and docs: open, so clients can discover the API", 200, 200, 200, 200, 200)
ADMIN = _rule("Django's admin: staff only, and per model only with the model's permission (a superuser has all)",
              302, 302, 302, 403, 302)

RULES: dict[str, Rule] = {
    "dashboard": PAGE_PUBLIC,
    "dashboard-data": PAGE_JSON_PUBLIC,
    "login": _rule("the log-in page", 200, 200, 200, 200, 200),
    "logout": _rule("log-out is a POST", 405, 405, 405, 405, 405),
    "clock": PAGE_JSON_PUBLIC,
    "bid-new": PAGE_TENANT,
    "job-list": PAGE_TENANT,
    "job-list-live": PAGE_TENANT,
    "job-detail-live": _rule("the job page's poller: alice's job; bob 404, staff and cluster managers every job", 302, 200, 404, 200, 200),
    "job-detail": _rule("alice's job: bob gets 404, staff and cluster managers read every job", 302, 200, 404, 200, 200),
    "job-cancel": _rule("alice's job: GET asks to confirm, POST cancels", 302, 200, 404, 403, 403).refusing(
        "post", anon=302, bob=404, staff=403, manager=403),
    "job-list-csv": PAGE_TENANT,
    "account": PAGE_TENANT,
    "ledger-csv": PAGE_TENANT,
    "market-settings": PAGE_STAFF,
    "utility-fits": PAGE_TENANT,
    "utility-fit-adopt": _rule("a tenant's POST", 302, 405, 405, 403, 403).refusing("post", anon=302, staff=403, manager=403),
    "lab": PAGE_PUBLIC,
    "lab-run": PAGE_PUBLIC,
    "lab-run-status": PAGE_LOGGED_IN_JSON,
    "lab-estimate": PAGE_LOGGED_IN_JSON,
    "lab-run-cancel": _rule("a POST (the run's owner or staff)", 302, 405, 405, 405, 405),
    "lab-run-json": PAGE_PUBLIC,
    "lab-run-table-csv": PAGE_PUBLIC,
    "sim": PAGE_PUBLIC,
    "sim-study": PAGE_PUBLIC,
    "sim-study-status": PAGE_LOGGED_IN_JSON,
    "sim-study-cancel": _rule("a POST", 302, 405, 405, 405, 405),
    "sim-study-csv": PAGE_PUBLIC,
    "sim-study-json": PAGE_PUBLIC,
    "sim-run-jobs-csv": PAGE_PUBLIC,
    "reservation-list": PAGE_TENANT,
    "reservation-new": PAGE_TENANT,
    "reservation-quote": PAGE_OWN,
    "reservation-quote-action": _rule("a POST on alice's quote", 405, 405, 405, 405, 405).refusing(
        "post", anon=302, bob=404, staff=403, manager=403),
    "reservation-market": PAGE_PUBLIC,
    "deadline-quote": PAGE_TENANT,
    "fairshare": PAGE_PUBLIC,
    "twait-explorer": _rule("the settings page's explorer (staff)", 302, 403, 403, 200, 403),
    "pools": PAGE_STAFF,
    "cura-jobs": PAGE_TENANT,
    "cura-jobs-live": PAGE_TENANT,
    "cura-job-cancel": _rule("a POST on alice's Cura job", 302, 405, 405, 403, 403).refusing(
        "post", anon=302, bob=404, staff=403, manager=403),
    "staff-jobs": PAGE_STAFF,
    "staff-ledger-adjust": PAGE_STAFF,
    "api-root": API_PUBLIC,
    "api-root.format": API_PUBLIC,
    "api-job-list": API_TENANT.refusing("post", **NON_TENANT_WRITE),
    "api-job-list.format": API_TENANT.refusing("post", **NON_TENANT_WRITE),
    "api-job-detail": API_OWN,
    "api-job-detail.format": API_OWN,
    "api-job-cancel": API_POST_OWN,
    "api-job-cancel.format": API_POST_OWN,
    "api-market": API_PUBLIC.refusing("patch", anon=401, alice=403, bob=403, manager=403),
    "api-allocation": API_PUBLIC,  # public totals; jobs by role (test_allocation_* below)
    "api-fairness": API_PUBLIC,
    "api-market-series": API_PUBLIC,
    "api-prices": API_PUBLIC,
    "api-rates": API_PUBLIC,
    "api-account": API_TENANT,
    "api-job-waiting": API_OWN,
    "api-fairshare": API_PUBLIC,
    "api-ledger": API_TENANT,
    "api-deadline-quote": API_POST_TENANT,
    "api-deadline-book": API_POST_TENANT,
    "api-token": _rule("POST obtains a token, DELETE revokes it; GET is not allowed", 405, 405, 405, 405, 405),
    "api-utility-fits": API_TENANT,
    "api-utility-adopt": API_POST_TENANT,
    "api-bid-preview": API_POST_TENANT,
    "api-pools": API_PUBLIC.refusing("patch", anon=401, alice=403, bob=403, manager=403),
    "api-cura-jobs": API_TENANT.refusing("post", **NON_TENANT_WRITE),
    "api-cura-job": API_OWN,
    "api-cura-job-cancel": API_POST_OWN,
    "api-staff-jobs": API_ALL_TENANTS,
    "api-staff-ledger-adjust": API_POST_STAFF,
    "api-schema": API_DOCS,
    "api-docs": API_DOCS,
    "api-redoc": API_DOCS,
    "api-reservations": API_TENANT,
    "api-quotes": API_TENANT.refusing("post", **NON_TENANT_WRITE),
    "api-quote": API_OWN,
    "api-reservation": API_OWN,
    "api-not-found": _rule("no such endpoint: a JSON 404 for everyone, in debug too", 404, 404, 404, 404, 404),
    "api-quote-accept": API_POST_OWN,
    "api-quote-decline": API_POST_OWN,
    "api-reservation-request": API_POST_TENANT,
    "api-reservation-prices": API_PUBLIC,
    "api-cluster-allocation": API_MANAGER,
    "api-cluster-update": API_POST_MANAGER,
    "admin:index": _rule("Django's admin: staff only", 302, 302, 302, 200, 302),
    "admin:login": _rule("the admin's log-in page (staff already in: sent on)", 200, 200, 200, 302, 200),
    "admin:logout": _rule("log-out is a POST (non-staff are sent to the admin's log-in first)", 302, 302, 302, 405, 302),
    "admin:password_change": _rule("Django's admin: staff only", 302, 302, 302, 200, 302),
    "admin:password_change_done": _rule("Django's admin: staff only", 302, 302, 302, 200, 302),
    "admin:jsi18n": _rule("Django's admin: staff only", 302, 302, 302, 200, 302),
    "admin:*": ADMIN,
}


def _routes() -> list[tuple[str, str, URLPattern]]:
    """(rule key, URL name, pattern) for every route; format-suffix twins get ".format"."""
    out: list[tuple[str, str, URLPattern]] = []

    def walk(patterns: list[Any], namespace: str | None) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, p.namespace or namespace)
            elif namespace == "admin":
                key = f"admin:{p.name}" if f"admin:{p.name}" in RULES else "admin:*"
                out.append((key, f"admin:{p.name}", p))
            else:
                suffixed = "format" in p.pattern.regex.groupindex
                out.append((f"{p.name}.format" if suffixed else str(p.name), str(p.name), p))

    walk(get_resolver().url_patterns, None)
    return out


def test_every_route_has_a_rule() -> None:
    missing = sorted({key for key, _, _ in _routes() if key not in RULES})
    assert not missing, f"routes without an access rule in RULES: {missing}"
    stale = sorted(set(RULES) - {key for key, _, _ in _routes()})
    assert not stale, f"rules for routes that no longer exist: {stale}"


@pytest.fixture
def world(market, alice, bob, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """alice's active job, quote, a lab run and a study; a staff member; a cluster manager."""
    job = bid_submit(tenant=alice, budget=Decimal("40"), work=[WorkItem("map", 3, 30.0, 1.0)], utility="linear",
                     name=SECRET, user=alice.user)
    assert market_clear(market_id=market.pk).status == "cleared"  # the dashboard's share chart has a point per job
    quote = reservation_quote(tenant=alice, resource_type="map", units=1, duration=600, arrival=0, deadline=3600)
    # a booked reservation and a Cura job of alice's: the reservation market and the pools show aggregates of them
    reservation = reservation_accept(quote=reservation_quote(tenant=alice, resource_type="reduce", units=1, duration=600,
                                                             arrival=600, deadline=7200, value="30"), user=alice.user)
    pools_setup_paper(market=market)
    account_deposit(account=alice.account, amount=Decimal("100000"), memo="the paper's Cura costs are in the thousands")
    cura_job = cura_job_submit(tenant=alice, user=alice.user, job_type=4, deadline_in_s=270)
    User = get_user_model()
    staff = User.objects.create_user(username="staffer", password="pw-for-tests-1", is_staff=True)
    manager = User.objects.create_user(username="yarn-rm", password="pw-for-tests-1")
    manager.groups.add(Group.objects.get_or_create(name=CLUSTER_MANAGER)[0])
    study = SimulationStudy.objects.create(title="study", created_by=staff)
    done = SimulationStudy.objects.create(title="gathered", created_by=staff, summary={
        "columns": ["configuration", "seeds", "mean response"], "rows": [["a"]], "estimates": {"a": {"mean response": [1.0, 0.1, 3]}}})
    done_run = ExperimentRun.objects.create(name="simulation", params={}, created_by=staff, study=done, status="done",
                                            result={"jobs": {"job": [1], "response": [2.0]}})
    run = ExperimentRun.objects.create(name="lab_steps", params={"steps": 1, "fail_at": -1}, created_by=staff, status="done",
                                       result={"figures": [], "tables": [{"title": "t", "columns": ["a"], "rows": [[1]]}], "summary": {}})
    ExperimentRun.objects.create(name="simulation", params={}, created_by=staff, study=study)  # the study page shows a queued run
    clients = {"anon": Client()}
    for name, user in (("alice", alice.user), ("bob", bob.user), ("staff", staff), ("manager", manager)):
        clients[name] = Client()
        clients[name].force_login(user)
    return {"job": job, "cura_job": cura_job, "quote": quote, "reservation": reservation,
            "run": run, "sim_run": done_run, "study": study, "done": done, "clients": clients, "alice": alice}


QUERIES = {"twait-explorer": "?t_wait=30", "lab-estimate": "?name=published_schedulers"}  # routes that need a parameter to answer 200


def _kwargs(name: str, pattern: URLPattern, world: dict[str, Any]) -> dict[str, Any] | None:
    groups = set(pattern.pattern.regex.groupindex)
    kw: dict[str, Any] = {}
    if "format" in groups:
        kw["format"] = "json"
    if "pk" in groups:
        if name.startswith(("job-", "api-job")):
            kw["pk"] = world["job"].pk
        elif "cura-job" in name:
            kw["pk"] = world["cura_job"].pk
        elif "quote" in name:
            kw["pk"] = world["quote"].pk
        elif name == "api-reservation":
            kw["pk"] = world["reservation"].pk
        elif name == "sim-run-jobs-csv":
            kw["pk"] = world["sim_run"].pk
        elif name.startswith("lab-run"):
            kw["pk"] = world["run"].pk
        elif name == "sim-study-csv":
            kw["pk"] = world["done"].pk
        elif name.startswith("sim-"):
            kw["pk"] = world["study"].pk
        else:
            return None
    if "index" in groups:
        kw["index"] = 0
    if "action" in groups:
        kw["action"] = "accept"
    if "rest" in groups:
        kw["rest"] = "no/such/endpoint/"
    if groups - {"format", "pk", "index", "action", "rest"}:
        return None  # admin routes with app labels or object ids: the namespace rule is checked on the others
    return kw


def test_every_route_answers_each_role_as_its_rule_says(world) -> None:  # type: ignore[no-untyped-def]
    wrong, leaks, checked = [], [], 0
    for key, name, pattern in _routes():
        kw = _kwargs(name, pattern, world)
        if kw is None:
            assert key == "admin:*", f"{name}: no test object for its URL parameters"
            continue
        path = reverse(name, kwargs=kw) + QUERIES.get(name, "")
        for actor, expected in RULES[key].statuses.items():
            response = world["clients"][actor].get(path)
            checked += 1
            if response.status_code != expected:
                wrong.append(f"{actor} GET {path} ({name}): {response.status_code}, rule says {expected} ({RULES[key].why})")
            if actor in ("bob", "anon") and response.status_code == 200 and not response.streaming:
                body = response.content.decode(errors="replace")
                if SECRET in body or "alice" in body:
                    leaks.append(f"{actor} GET {path} ({name}) carries alice's job or name")
        for method, statuses in RULES[key].writes.items():
            for actor, expected in statuses.items():
                response = getattr(world["clients"][actor], method)(path, data="{}", content_type="application/json")
                checked += 1
                if response.status_code != expected:
                    wrong.append(f"{actor} {method.upper()} {path} ({name}): {response.status_code}, rule says {expected}")
    assert checked > 300
    assert not wrong, "\n".join(wrong)
    assert not leaks, "\n".join(leaks)


# --- The privacy tiers on the answers that carry jobs ----------------------------------------


def test_allocation_gives_tenants_their_own_jobs_and_public_queue_totals(world) -> None:  # type: ignore[no-untyped-def]
    clients, job = world["clients"], world["job"]
    bob = clients["bob"].get("/api/market/allocation/").json()
    assert bob["scope"] == "own" and bob["jobs"] == []
    assert SECRET not in str(bob) and "alice" not in str(bob)
    # the public totals still count alice's job in her queue (an aggregate, no id or name)
    totals = {q["queue"]: q for q in bob["queues"]}
    alice = clients["alice"].get("/api/market/allocation/").json()
    assert alice["scope"] == "own" and job.pk in [j["job_id"] for j in alice["jobs"]]
    assert totals["root.orga.analytics"]["jobs"] == len(alice["jobs"]) >= 1
    assert totals["root.orga.analytics"]["pending"]["map"] == sum(j["pending"].get("map", 0) for j in alice["jobs"]) >= 3
    assert alice["queues"] == bob["queues"]


@pytest.mark.parametrize("actor", ["staff", "manager"])
def test_staff_and_cluster_managers_read_every_tenants_jobs(world, actor) -> None:  # type: ignore[no-untyped-def]
    clients, job = world["clients"], world["job"]
    allocation = clients[actor].get("/api/market/allocation/").json()
    assert allocation["scope"] == "all"
    assert (job.pk, world["alice"].name) in [(j["job_id"], j["tenant"]) for j in allocation["jobs"]]
    listed = clients[actor].get("/api/staff/jobs/").json()
    assert (job.pk, world["alice"].name, SECRET) in [(j["id"], j["tenant"], j["name"]) for j in listed["results"]]
    assert SECRET in clients[actor].get("/dashboard/data.json?jobs=all").content.decode()


def test_the_dashboard_data_shows_a_tenant_only_its_own_jobs(world, bob) -> None:  # type: ignore[no-untyped-def]
    own = bid_submit(tenant=bob, budget=Decimal("10"), work=[WorkItem("map", 1, 30.0, 1.0)], utility="linear",
                     name="bob-own-job", user=bob.user)
    market_clear(market_id=bob.market_id)
    for scope in ("all", "mine"):
        body = world["clients"]["bob"].get(f"/dashboard/data.json?jobs={scope}").content.decode()
        assert f"#{own.pk} bob-own-job" in body and SECRET not in body
