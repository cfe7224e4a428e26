"""The KKT read-out of a clearing (``Plan.diagnostics.max_kkt_residual``, paper 000, Lemma 2) is
computed when first read: the value read is the one the clearing's result gives at once, bit for
bit, on every path; a Plan carrying it serialises, copies and compares as one carrying a float;
and an offline run, which never reads it, never computes it."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from scheduler.abacus import policy as policy_module
from scheduler.abacus import slo as slo_module
from scheduler.abacus.kkt import kkt_residual
from scheduler.abacus.plain import KKT_MAX_JOBS, TYPES, small_kkt_max
from scheduler.abacus.slo import AbacusNoPoolPolicy, AbacusSloPolicy
from scheduler.abacus.state import AuctionResult
from scheduler.deferred import Deferred
from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Diagnostics, Plan
from scheduler.registry import MECHANISMS
from scheduler.types import MarketSnapshot
from simulator.runner import MarketParams, run
from simulator.workloads.traces import TraceJob


@st.composite
def snapshots(draw: st.DrawFn, min_n: int = 1, max_n: int = KKT_MAX_JOBS + 24) -> MarketSnapshot:
    """Markets on both sides of KKT_MAX_JOBS (plain and numpy read-outs), of TYPES and other
    numbers of types, with partial demand, leaf queues, mixed utilities and, half the time, SLOs."""
    n = draw(st.integers(min_n, max_n))
    m = draw(st.sampled_from([TYPES, TYPES, 1, 3]))
    slo = draw(st.none() | hnp.arrays(np.float64, n, elements=st.sampled_from([np.nan, 0.05, 0.3, 0.9])))
    return MarketSnapshot(
        job_ids=np.arange(100, 100 + n, dtype=np.int64),
        group=draw(hnp.arrays(np.int64, n, elements=st.integers(0, 2))),
        budgets=draw(hnp.arrays(np.float64, n, elements=st.floats(1e-2, 1e4))),
        weights=draw(hnp.arrays(np.float64, (n, m), elements=st.one_of(st.just(0.0), st.floats(0.05, 5.0)))),
        utility=tuple(draw(st.lists(st.sampled_from(["linear", "log"]), min_size=n, max_size=n))),
        demand=draw(hnp.arrays(np.bool_, (n, m), elements=st.booleans())),
        capacity=np.full(m, 10.0),
        alpha=draw(st.sampled_from([0.0, 0.5, 1.0])),
        max_rounds=draw(st.sampled_from([3, 1000])),
        min_utility=slo,
    )


def eager_residual(plan: Plan, snapshot: MarketSnapshot) -> tuple[float, bool]:
    """The largest KKT residual of the clearing, computed from the Plan's (copied) arrays at once:
    numpy's :func:`kkt_residual`, jobs outside the SLO pool demanding nothing (the same as the
    float-list read-out's where that applies); and whether that one applies."""
    result = AuctionResult(plan.shares.copy(), plan.sub_budgets.copy(), plan.diagnostics.rounds, True)
    demand = snapshot.demand.copy()
    demand[np.isin(snapshot.job_ids, plan.diagnostics.outside_pool)] = False
    args = (result, snapshot.weights.copy(), snapshot.utility, demand, snapshot.group.copy())
    want = float(np.max(kkt_residual(*args), initial=0.0))
    plain = small_kkt_max(*args)
    assert plain is None or plain.hex() == want.hex()
    return want, plain is not None


def pending(d: Diagnostics) -> bool:
    """Whether the residual is still to be computed."""
    return isinstance(d.__dict__["_max_kkt_residual"], Deferred)


@settings(max_examples=150, deadline=None)
@given(snapshots(), st.sampled_from([AbacusSloPolicy, AbacusNoPoolPolicy]))
def test_the_residual_read_is_the_clearings_bit_for_bit(snapshot: MarketSnapshot, policy: Any) -> None:
    """What a reader gets, first read or later, equals the residual of the clearing's result."""
    with np.errstate(all="ignore"):
        plan = policy().clear(snapshot)
        want, on_lists = eager_residual(plan, snapshot)
    event("plain read-out" if on_lists else "numpy read-out")
    event("pool left jobs out" if plan.diagnostics.outside_pool else "no job left out")
    assert pending(plan.diagnostics)
    with np.errstate(all="ignore"):
        got = plan.diagnostics.max_kkt_residual
    assert type(got) is float and got.hex() == want.hex()
    assert not pending(plan.diagnostics) and plan.diagnostics.max_kkt_residual is got  # kept, computed once


@pytest.mark.parametrize("n", [3, KKT_MAX_JOBS, KKT_MAX_JOBS + 1, 2 * KKT_MAX_JOBS])
def test_both_read_outs_give_the_clearings_residual(n: int) -> None:
    """Markets of TYPES types up to KKT_MAX_JOBS jobs read on float lists, larger ones by numpy; an
    unconverged clearing, so the residual is not 0."""
    rng = np.random.default_rng(n)
    snapshot = MarketSnapshot(
        job_ids=np.arange(n, dtype=np.int64), group=np.arange(n) % 2 * (n > 3), budgets=rng.uniform(1.0, 100.0, n),
        weights=rng.uniform(0.5, 2.0, (n, TYPES)), utility=("linear",) * n, demand=rng.random((n, TYPES)) < 0.9,
        capacity=np.full(TYPES, 10.0), alpha=0.5, max_rounds=1,
    )
    plan = AbacusSloPolicy().clear(snapshot)
    want, on_lists = eager_residual(plan, snapshot)
    assert on_lists == (n <= KKT_MAX_JOBS)
    assert want > 1e-6 and plan.diagnostics.max_kkt_residual.hex() == want.hex()


def deferred_plan(value: float) -> tuple[Plan, list[int]]:
    calls: list[int] = []

    def compute() -> float:
        calls.append(1)
        return value

    plan = Plan(job_ids=np.array([3, 17], dtype=np.int64), shares=np.array([[1 / 3, 0.0], [2 / 3, 1.0]]),
                sub_budgets=np.array([[0.1, 0.2], [np.pi, 1e-300]]), payments={},
                diagnostics=Diagnostics("abacus", 7, False, np.array([1.5, 2.25]), Deferred(compute), (3,)))
    return plan, calls


def test_a_deferred_residual_serialises_and_compares_as_its_value() -> None:
    value = 3.0000000000000004e-7
    plan, calls = deferred_plan(value)
    back = Plan.from_bytes(plan.to_bytes())
    assert calls == [1] and back.diagnostics.max_kkt_residual == value
    prices = plan.diagnostics.prices  # equality of Diagnostics needs the same prices array (numpy's ==)
    assert plan.diagnostics == dataclasses.replace(plan.diagnostics) == Diagnostics("abacus", 7, False, prices, value, (3,))
    assert Diagnostics("abacus", 7, False, prices, Deferred(lambda: value)) == Diagnostics("abacus", 7, False, prices, value)
    assert Diagnostics("abacus", 7, False, prices, Deferred(lambda: 2 * value)) != Diagnostics("abacus", 7, False, prices, value)
    assert Plan.from_state(plan.to_state()).diagnostics.max_kkt_residual == value
    assert Diagnostics("abacus", 7, False, np.zeros(1), 3e-7).max_kkt_residual == 3e-7  # plain floats as before
    assert Diagnostics("abacus", 7, False, np.zeros(1)).max_kkt_residual == 0.0
    assert calls == [1]


def test_copies_and_pickles_carry_the_value_and_the_field_stays_frozen() -> None:
    plan, calls = deferred_plan(0.125)
    for clone in (copy.deepcopy(plan.diagnostics), pickle.loads(pickle.dumps(plan.diagnostics)), copy.copy(plan.diagnostics)):
        assert not pending(clone) and clone.max_kkt_residual == 0.125
    assert calls == [1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.diagnostics.max_kkt_residual = 1.0  # type: ignore[misc]
    assert "max_kkt_residual=0.125" in repr(plan.diagnostics)


@MECHANISMS.register("test-deferred-kkt-abacus", "Abacus with SLOs, keeping its Plans and their residuals (tests)")
class KeepingPolicy:
    """The registry's ``abacus``, keeping every Plan with the residual of its arrays at clearing time."""

    name = "test-deferred-kkt-abacus"
    kept: ClassVar[list[tuple[Plan, float]]] = []

    def clear(self, snapshot: MarketSnapshot) -> Plan:
        plan = AbacusSloPolicy().clear(snapshot)
        KeepingPolicy.kept.append((plan, eager_residual(plan, snapshot)[0]))
        return plan


def test_an_offline_run_never_computes_the_residual_and_a_later_read_is_unchanged(monkeypatch: Any) -> None:
    """No clearing of a run (with and without SLOs) computes it; read after the run, every Plan's
    residual is the one of its arrays at clearing time (nothing the Plan refers to was mutated)."""
    calls: list[str] = []

    def counted(name: str, real: Any) -> Any:
        def wrapper(*args: Any) -> float:
            calls.append(name)
            return float(real(*args))
        return wrapper

    monkeypatch.setattr(policy_module, "kkt_max", counted("kkt_max", policy_module.kkt_max))
    monkeypatch.setattr(slo_module, "_pool_kkt_max", counted("pool", slo_module._pool_kkt_max))
    tree = QueueTree.from_paths({"root.g1.alice": 1, "root.g1.bob": 1, "root.g2.carol": 2})
    jobs = [TraceJob(k, 3.0 * k, ["alice", "bob", "carol"][k % 3], "g", (1 + k % 4, k % 3), (2.0 + k % 5, 4.0))
            for k in range(16)]
    for slo in (None, lambda job: [0.2, 0.6, None][job.job_id % 3]):
        KeepingPolicy.kept.clear()
        params = MarketParams(mechanism="test-deferred-kkt-abacus", min_utility=slo)
        result = run(jobs, tree=tree, leaf_of_user={"alice": 0, "bob": 1, "carol": 2}, capacity=[3, 2], params=params)
        assert len(result.finished) == 16 and result.clearings == len(KeepingPolicy.kept) > 16
        assert calls == [] and all(pending(plan.diagnostics) for plan, _ in KeepingPolicy.kept)
        for plan, want in KeepingPolicy.kept:
            assert plan.diagnostics.max_kkt_residual.hex() == want.hex()
        assert len(calls) == len(KeepingPolicy.kept)
        if slo is not None:
            assert "pool" in calls and any(plan.diagnostics.outside_pool for plan, _ in KeepingPolicy.kept)
        calls.clear()
