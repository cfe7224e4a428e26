"""Tests of the policy registry and the one-shot baselines (paper 000, Sec. 7)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from scheduler import registry
from scheduler.abacus import AbacusPolicy
from scheduler.registry import available, get_policy, register
from scheduler.types import MarketSnapshot, Outcome


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


def test_builtin_policies_are_available() -> None:
    assert {"abacus", "proportional", "equal"} <= set(available())
    assert available() == sorted(available())


def test_get_policy_passes_keyword_arguments() -> None:
    policy = get_policy("abacus", alpha=0.0)
    assert isinstance(policy, AbacusPolicy)
    np.testing.assert_allclose(policy.allocate(snapshot()).shares[3], [1.0, 1.0])


def test_unknown_name_lists_available_policies() -> None:
    with pytest.raises(KeyError, match="available: .*abacus.*equal.*proportional"):
        get_policy("drf-prime")


def test_register_adds_and_refuses_to_shadow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @register("constant")
    class Constant:
        name = "constant"

        def allocate(self, snap: MarketSnapshot) -> Outcome:
            return get_policy("equal").allocate(snap)

    assert "constant" in available()
    assert isinstance(get_policy("constant"), Constant)
    register("constant")(Constant)  # re-registering the same factory is harmless
    with pytest.raises(ValueError, match="already registered"):
        register("abacus")(Constant)


def test_proportional_shares_follow_money_per_demanded_resource() -> None:
    """Group 0 sub-budgets on resource 0: 50, 25, 30 (job 2 demands only it)."""
    outcome = get_policy("proportional").allocate(snapshot())
    np.testing.assert_allclose(outcome.shares[:3, 0], np.array([50, 25, 30]) / 105)
    np.testing.assert_allclose(outcome.shares[:3, 1], [50 / 75, 25 / 75, 0.0])
    np.testing.assert_allclose(outcome.shares[3:], [[1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(outcome.prices, [(50 + 25 + 30 + 40) / 8, (50 + 25 + 40) / 4])
    assert outcome.policy == "proportional" and outcome.rounds == 0 and outcome.converged


def test_equal_gives_one_over_k_among_demanding_jobs() -> None:
    outcome = get_policy("equal").allocate(snapshot())
    np.testing.assert_allclose(outcome.shares[:3], [[1 / 3, 1 / 2], [1 / 3, 1 / 2], [1 / 3, 0]])
    np.testing.assert_allclose(outcome.shares[3:], [[1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(outcome.sub_budgets.sum(axis=1), [100, 50, 30, 80, 0])


@pytest.mark.parametrize("name", ["abacus", "proportional", "equal"])
def test_every_policy_returns_a_consistent_outcome(name: str) -> None:
    snap = snapshot()
    outcome = get_policy(name).allocate(snap)
    assert outcome.policy == name
    np.testing.assert_array_equal(outcome.job_ids, snap.job_ids)
    for g in (0, 1):
        rows = snap.group == g
        demanded = snap.demand[rows].any(axis=0)
        np.testing.assert_allclose(outcome.shares[rows].sum(axis=0), demanded.astype(float))
    assert np.all(outcome.shares[~snap.demand] == 0)
    np.testing.assert_allclose(outcome.prices, outcome.sub_budgets.sum(axis=0) / snap.capacity)


@pytest.mark.parametrize("name", ["proportional", "equal"])
def test_baselines_reject_malformed_snapshots(name: str) -> None:
    bad = replace(snapshot(), demand=np.ones((5, 3), dtype=np.bool_))
    with pytest.raises(ValueError):
        get_policy(name).allocate(bad)
