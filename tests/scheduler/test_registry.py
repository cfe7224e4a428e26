"""The stage registries, the one-shot baselines (paper 000, Sec. 7) and the Plan they return."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from scheduler.abacus.policy import AbacusPolicy
from scheduler.dispatch import ShareDispatcher
from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.fifo import FifoAllocator
from scheduler.payments import PaymentRule, settle
from scheduler.plan import Diagnostics, Plan, Reservation
from scheduler.registry import DISPATCH, FAIRSHARE, MECHANISMS, Registry, UnknownName
from scheduler.types import MarketSnapshot


def snapshot() -> MarketSnapshot:
    """Two leaf queues; job 2 demands only resource 0, job 4 nothing."""
    demand = np.array([[1, 1], [1, 1], [1, 0], [1, 1], [0, 0]], dtype=np.bool_)
    return MarketSnapshot(
        job_ids=np.array([10, 11, 12, 20, 21], dtype=np.int64),
        group=np.array([0, 0, 0, 1, 1], dtype=np.int64),
        budgets=np.array([100.0, 50.0, 30.0, 80.0, 10.0]),
        weights=np.array([[1.0, 2.0], [2.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]),
        utility=("linear",) * 5,
        demand=demand,
        capacity=np.array([8.0, 4.0]),
    )


@pytest.mark.parametrize(("registry", "names"), [
    (MECHANISMS, ("abacus", "proportional", "equal")),
    (FAIRSHARE, ("fifo", "mlrf", "ltrf", "hltrf", "drf", "slurm", "karma", "tiresias", "themis")),
    (DISPATCH, ("stride", "lottery", "fifo")),
], ids=["mechanisms", "fairshare", "dispatch"])
def test_each_stage_registers_its_names_once(registry: Registry[object], names: tuple[str, ...]) -> None:
    assert set(names) <= set(registry.names())
    assert len(registry.names()) == len(set(registry.names()))
    assert [n for n, _ in registry.choices()] == list(registry.names())
    assert all(label for _, label in registry.choices())


def test_builders_make_the_named_policies() -> None:
    tree = QueueTree.flat(["a", "b"])
    assert isinstance(MECHANISMS.build("abacus", alpha=0.0), AbacusPolicy)
    assert isinstance(FAIRSHARE.build("fifo", tree=tree, t_wait=0.0), FifoAllocator)
    hltrf = FAIRSHARE.build("hltrf", tree=tree, t_wait=5.0)
    assert isinstance(hltrf, FairShareAllocator) and (hltrf.policy, hltrf.t_wait) == ("hltrf", 5.0)
    lottery = DISPATCH.build("lottery", seed=3)
    assert isinstance(lottery, ShareDispatcher) and lottery.mode == "lottery"


@pytest.mark.parametrize("registry", [MECHANISMS, FAIRSHARE, DISPATCH], ids=lambda r: r.stage)
def test_unknown_name_is_a_clear_error_listing_the_known_ones(registry: Registry[object]) -> None:
    with pytest.raises(UnknownName, match=f"unknown {registry.stage} 'drf-prime'; choose one of: .*{registry.names()[0]}"):
        registry.validate("drf-prime")
    with pytest.raises(ValueError):  # UnknownName is a ValueError
        registry.build("drf-prime")


def test_register_adds_and_refuses_to_shadow() -> None:
    reg: Registry[object] = Registry("test stage")

    @reg.register("constant", "A constant")
    class Constant:
        pass

    assert "constant" in reg and isinstance(reg.build("constant"), Constant)
    reg.register("constant", "again")(Constant)  # re-registering the same factory is harmless
    with pytest.raises(ValueError, match="already registered"):
        reg.register("constant", "other")(object)


def test_proportional_shares_follow_money_per_demanded_resource() -> None:
    """Group 0 sub-budgets on resource 0: 50, 25, 30 (job 2 demands only it)."""
    plan = MECHANISMS.build("proportional").clear(snapshot())
    np.testing.assert_allclose(plan.shares[:3, 0], np.array([50, 25, 30]) / 105)
    np.testing.assert_allclose(plan.shares[:3, 1], [50 / 75, 25 / 75, 0.0])
    np.testing.assert_allclose(plan.shares[3:], [[1.0, 1.0], [0.0, 0.0]])
    d = plan.diagnostics
    np.testing.assert_allclose(d.prices, [(50 + 25 + 30 + 40) / 8, (50 + 25 + 40) / 4])
    assert d.mechanism == "proportional" and d.rounds == 0 and d.converged


def test_equal_gives_one_over_k_among_demanding_jobs() -> None:
    plan = MECHANISMS.build("equal").clear(snapshot())
    np.testing.assert_allclose(plan.shares[:3], [[1 / 3, 1 / 2], [1 / 3, 1 / 2], [1 / 3, 0]])
    np.testing.assert_allclose(plan.shares[3:], [[1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(plan.sub_budgets.sum(axis=1), [100, 50, 30, 80, 0])


@pytest.mark.parametrize("name", ["abacus", "proportional", "equal"])
def test_every_mechanism_returns_a_consistent_plan(name: str) -> None:
    snap = snapshot()
    plan = MECHANISMS.build(name).clear(snap)
    assert plan.diagnostics.mechanism == name
    np.testing.assert_array_equal(plan.job_ids, snap.job_ids)
    for g in (0, 1):
        rows = snap.group == g
        demanded = snap.demand[rows].any(axis=0)
        np.testing.assert_allclose(plan.shares[rows].sum(axis=0), demanded.astype(float))
    assert np.all(plan.shares[~snap.demand] == 0)
    np.testing.assert_allclose(plan.diagnostics.prices, plan.sub_budgets.sum(axis=0) / snap.capacity)
    # every job pays its budget at completion (paper 000, Sec. 3)
    assert plan.payments == {int(j): PaymentRule.at_completion(float(b)) for j, b in zip(snap.job_ids, snap.budgets, strict=True)}


@pytest.mark.parametrize("name", ["abacus", "proportional", "equal"])
def test_a_job_with_an_slo_pays_only_if_it_is_met(name: str) -> None:
    snap = replace(snapshot(), min_utility=np.array([np.nan, 0.5, np.nan, np.nan, np.nan]))
    rule = MECHANISMS.build(name).clear(snap).payments[11]
    assert rule == PaymentRule.if_slo_met(50.0, 0.5)
    assert settle(rule, completed=True, achieved_utility=0.6) == 50.0
    assert settle(rule, completed=True, achieved_utility=0.4) == 0.0
    assert settle(rule, completed=True, achieved_utility=None) == 0.0


@pytest.mark.parametrize("name", ["proportional", "equal"])
def test_baselines_reject_malformed_snapshots(name: str) -> None:
    bad = replace(snapshot(), demand=np.ones((5, 3), dtype=np.bool_))
    with pytest.raises(ValueError):
        MECHANISMS.build(name).clear(bad)


# --- the Plan itself ------------------------------------------------------------------------


@pytest.mark.parametrize(("rule", "completed", "owed"), [
    (PaymentRule.at_completion(10.0), True, 10.0),
    (PaymentRule.at_completion(10.0), False, 0.0),  # a cancelled job pays nothing
    (PaymentRule.fixed(7.5), True, 0.0),  # paid at acceptance, nothing more at the end
    (PaymentRule.fixed(7.5), False, 0.0),
    (PaymentRule.if_slo_met(9.0, 1.0), False, 0.0),
], ids=["completion", "cancelled", "fixed-complete", "fixed-cancelled", "slo-cancelled"])
def test_settle_follows_the_rule(rule: PaymentRule, completed: bool, owed: float) -> None:
    assert settle(rule, completed=completed, achieved_utility=2.0) == owed


@pytest.mark.parametrize("bad", [
    lambda: PaymentRule("bonus", 1.0),  # type: ignore[arg-type]
    lambda: PaymentRule.at_completion(-1.0),
    lambda: PaymentRule.at_completion(math.inf),
    lambda: PaymentRule("if_slo_met", 1.0),
    lambda: PaymentRule("fixed", 1.0, 0.5),
    lambda: Reservation(1, 0, 0, 0.0, 10.0),
    lambda: Reservation(1, 0, 2, 10.0, 10.0),
    lambda: Reservation(1, -1, 2, 0.0, 10.0),
    lambda: Reservation(1, 0, 2, 0.0, math.inf),
], ids=["kind", "negative", "infinite", "slo-without-min", "min-without-slo", "no-units", "empty-window",
        "bad-resource", "open-window"])
def test_malformed_plan_parts_are_refused(bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        bad()


def test_plan_round_trips_through_json_exactly() -> None:
    import json

    plan = Plan(
        job_ids=np.array([3, 17], dtype=np.int64),
        shares=np.array([[1 / 3, 0.0], [2 / 3, 1.0]]),
        sub_budgets=np.array([[0.1, 0.2], [np.pi, 1e-300]]),
        payments={3: PaymentRule.at_completion(12.5), 17: PaymentRule.fixed(40.0)},
        diagnostics=Diagnostics("abacus", 7, False, np.array([1.5, 2.25]), 3e-7),
        reservations=(Reservation(17, 0, 8, 600.0, 900.0),),
    )
    back = Plan.from_state(json.loads(json.dumps(plan.to_state())))
    np.testing.assert_array_equal(back.shares, plan.shares)
    np.testing.assert_array_equal(back.sub_budgets, plan.sub_budgets)
    assert back.payments == plan.payments and back.reservations == plan.reservations
    assert back.diagnostics.rounds == 7 and not back.diagnostics.converged
    assert back.reserved_jobs() == {17}
    assert Reservation(17, 0, 8, 600.0, 900.0).active(600.0) and not Reservation(17, 0, 8, 600.0, 900.0).active(900.0)


def test_plan_round_trips_through_bytes_exactly() -> None:
    plan = Plan(
        job_ids=np.array([3, 17], dtype=np.int64),
        shares=np.array([[1 / 3, 0.0], [2 / 3, 1.0]]),
        sub_budgets=np.array([[0.1, 0.2], [np.pi, 1e-300]]),
        payments={3: PaymentRule.at_completion(12.5), 17: PaymentRule.if_slo_met(40.0, 0.5), 99: PaymentRule.fixed(3.0)},
        diagnostics=Diagnostics("abacus", 7, False, np.array([1.5, 2.25]), 3e-7),
        reservations=(Reservation(99, 1, 2, 60.0, 120.0),),
    )
    back = Plan.from_bytes(plan.to_bytes())
    np.testing.assert_array_equal(back.shares, plan.shares)
    np.testing.assert_array_equal(back.sub_budgets, plan.sub_budgets)
    np.testing.assert_array_equal(back.job_ids, plan.job_ids)
    assert back.payments == plan.payments and back.reservations == plan.reservations
    assert back.diagnostics.mechanism == "abacus" and back.diagnostics.max_kkt_residual == 3e-7
    with pytest.raises(ValueError):
        Plan.from_bytes(plan.to_bytes() + b"\0")
