"""Every settings change reaches the very next clearing, whichever path clears (docs/economy.md, "Settings
reach the next clearing").

Through the API, as staff and a cluster manager would: bids, a tick, PATCH one parameter, a tick;
then the stored Plan equals a fresh solve of the engine's market at the new parameters, the Plan's
row records the parameters it used, and the engine runs with them. The clearing task runs (its
after-commit trigger is executed), so the path that used to clear on the engine's stale settings
is the one under test; a second test lets only the tick clear.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from marketplace.auction.services import WorkItem, bid_submit
from marketplace.market import adapters
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.market import Market
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.market import engine_context, engine_load
from scheduler.registry import MECHANISMS

# (field, new value, as the clearing records it); applied in this order, each on top of the last
CHANGES = [
    ("alpha", 0.1, 0.1),
    ("auction_tolerance", 1e-5, 1e-5),
    ("auction_max_rounds", 400, 400),
    ("mechanism", "proportional", "proportional"),
    ("mechanism", "abacus", "abacus"),
    ("fairshare_policy", "ltrf", "ltrf"),
    ("fairshare_history", "decay", "decay"),
    ("fairshare_history_length", 600.0, 600.0),
    ("t_wait", 5.0, 5.0),
    ("t_wait", "off", None),
    ("dispatch_mode", "lottery", "lottery"),
]
ENGINE_FIELD = {"alpha": "alpha", "auction_tolerance": "tol", "auction_max_rounds": "max_rounds", "mechanism": "mechanism",
                "fairshare_policy": "fairshare", "fairshare_history": "history", "fairshare_history_length": "history_length",
                "t_wait": "t_wait", "dispatch_mode": "dispatch"}


@pytest.fixture
def staff_api(db) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("ops", password="pw-ops-123", is_staff=True))
    return client


@pytest.fixture
def manager_api(db) -> APIClient:  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user("mgr", password="pw-mgr-123")
    user.groups.add(Group.objects.get_or_create(name="cluster-manager")[0])
    client = APIClient()
    client.force_authenticate(user)
    return client


def _bids(alice, bob) -> dict[str, int]:  # type: ignore[no-untyped-def]
    # long work: no job departs during the test, so every Plan prices the same jobs
    work = [WorkItem("map", 200, 500.0), WorkItem("reduce", 50, 500.0)]
    cheap = bid_submit(tenant=alice, budget="20", work=work)
    dear = bid_submit(tenant=alice, budget="400", work=work)
    other = bid_submit(tenant=bob, budget="100", work=work)
    return {"cheap": cheap.pk, "dear": dear.pk, "other": other.pk}


def _stored(market: Market) -> tuple[AllocationSnapshot, object]:
    row = AllocationSnapshot.objects.filter(market=market, plan__isnull=False).latest("id")
    return row, adapters.plan_of(row.plan)


def _fresh_solve(market: Market):  # type: ignore[no-untyped-def]
    """The engine's market now, cleared cold by the market's mechanism at its settings now."""
    market.refresh_from_db()
    engine = engine_load(market=market, context=engine_context(market))
    return engine, MECHANISMS.build(market.mechanism).clear(engine.snapshot())


def _check_plan_is_fresh(market: Market, field: str, recorded: object) -> None:
    row, plan = _stored(market)
    engine, fresh = _fresh_solve(market)
    assert row.params[field] == recorded, (field, row.params)
    assert row.state_version == market.state_version == market.cleared_version
    assert plan.diagnostics.mechanism == fresh.diagnostics.mechanism == market.mechanism
    order = [plan.job_ids.tolist().index(j) for j in fresh.job_ids.tolist()]
    assert sorted(order) == list(range(plan.n))
    assert np.allclose(plan.shares[order], fresh.shares, atol=1e-3), (field, plan.shares[order], fresh.shares)
    assert np.allclose(plan.diagnostics.prices, fresh.diagnostics.prices, rtol=1e-3), field
    wanted = getattr(market, field)
    assert getattr(engine.config, ENGINE_FIELD[field]) == wanted  # the tick handed it to the engine


def test_each_patched_parameter_is_in_the_next_plan(market, alice, bob, staff_api, manager_api,
                                                    django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        jobs = _bids(alice, bob)
    cluster_advance(market_id=market.pk, seconds=1.0)
    row, plan = _stored(market)
    cheap = plan.job_ids.tolist().index(jobs["cheap"])
    assert plan.shares[cheap, 0] == pytest.approx(20**0.5 / (20**0.5 + 400**0.5), abs=1e-3)  # alpha 0.5's split
    for field, value, recorded in CHANGES:
        with django_capture_on_commit_callbacks(execute=True):
            answer = staff_api.patch("/api/market/", {field: value}, format="json")
        assert answer.status_code == 200, answer.content
        state = staff_api.get("/api/market/").json()  # the clearing task, run after the PATCH committed, cleared at once
        assert state["cleared_version"] == state["state_version"] and state["last_clearing"]["params"][field] == recorded
        cluster_advance(market_id=market.pk, seconds=1.0)
        _check_plan_is_fresh(market, field, recorded)
        if field == "alpha":
            row, plan = _stored(market)
            share = plan.shares[plan.job_ids.tolist().index(jobs["cheap"]), 0]
            assert share == pytest.approx(20**0.1 / (20**0.1 + 400**0.1), abs=1e-3)  # ~0.43, the alpha-0.1 split
    # capacities, through the cluster manager's interface (paper 001, Sec. 2.3.2 update)
    with django_capture_on_commit_callbacks(execute=True):
        answer = manager_api.post("/api/cluster/update/", {"capacity": {"map": 7}}, format="json")
    assert answer.status_code == 200, answer.content
    cluster_advance(market_id=market.pk, seconds=1.0)
    row, plan = _stored(market)
    assert row.params["capacity"] == [7, 5]
    engine, fresh = _fresh_solve(market)
    assert engine.cluster.capacity.tolist() == [7, 5]
    assert np.allclose(plan.diagnostics.prices, fresh.diagnostics.prices, rtol=1e-3)
    # the dashboard's "last clearing" names the parameters it used
    state = staff_api.get("/api/market/").json()
    assert state["last_clearing"]["params"]["alpha"] == 0.1 and state["last_clearing"]["params"]["capacity"] == [7, 5]


def test_the_tick_alone_clears_a_change_at_its_new_parameters(market, alice, bob, staff_api,
                                                              django_capture_on_commit_callbacks):
    # no clearing task runs (a stopped worker): the tick clears the change before it hands out a slot
    with django_capture_on_commit_callbacks(execute=True):
        jobs = _bids(alice, bob)
    cluster_advance(market_id=market.pk, seconds=1.0)
    assert staff_api.patch("/api/market/", {"alpha": 0.1}, format="json").status_code == 200
    market.refresh_from_db()
    assert market.cleared_version < market.state_version
    cluster_advance(market_id=market.pk, seconds=1.0)
    _check_plan_is_fresh(market, "alpha", 0.1)
    _row, plan = _stored(market)
    assert plan.shares[plan.job_ids.tolist().index(jobs["cheap"]), 0] == pytest.approx(0.426, abs=5e-3)
