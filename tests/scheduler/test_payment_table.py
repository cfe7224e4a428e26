"""scheduler.payments.PaymentTable (the rules of a clearing as arrays) stands for the dict of rules it
replaced: the same rules in the same order, the same stored bytes, the same errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.payments import PaymentRule, PaymentTable, budget_payment, budget_payments
from scheduler.plan import Diagnostics, Plan
from scheduler.types import MarketSnapshot


def _snapshot(n: int, seed: int, with_slo: bool) -> MarketSnapshot:
    rng = np.random.default_rng(seed)
    slo = np.where(rng.random(n) < 0.5, rng.uniform(0.1, 3.0, n), np.nan) if with_slo else None
    return MarketSnapshot(
        job_ids=rng.permutation(np.arange(10, 10 + 3 * n, 3, dtype=np.int64)), group=rng.integers(0, 3, n),
        budgets=rng.uniform(1.0, 200.0, n), weights=rng.uniform(0.5, 2.0, (n, 2)), utility=("linear",) * n,
        demand=np.ones((n, 2), dtype=np.bool_), capacity=np.array([10.0, 5.0]), min_utility=slo,
    )


def _dict_rules(snap: MarketSnapshot) -> dict[int, PaymentRule]:
    """The rules as the dict the table replaced: budget_payment job by job."""
    slo = [None] * snap.n if snap.min_utility is None else [u if math.isfinite(u) else None for u in snap.min_utility.tolist()]
    return {int(j): budget_payment(b, u) for j, b, u in zip(snap.job_ids.tolist(), snap.budgets.tolist(), slo, strict=True)}


def _plan(snap: MarketSnapshot, payments: object) -> Plan:
    return Plan(job_ids=snap.job_ids.copy(), shares=np.full((snap.n, 2), 0.5), sub_budgets=np.ones((snap.n, 2)),
                payments=payments,  # type: ignore[arg-type]
                diagnostics=Diagnostics(mechanism="abacus", rounds=3, converged=True, prices=np.array([1.0, 2.0])))


@pytest.mark.parametrize(("seed", "with_slo"), [(0, False), (1, True), (2, True)])
def test_budget_payments_table_is_the_dict_of_budget_payment(seed: int, with_slo: bool) -> None:
    snap = _snapshot(40, seed, with_slo)
    table, rules = budget_payments(snap), _dict_rules(snap)
    assert isinstance(table, PaymentTable)
    assert list(table.items()) == list(rules.items())  # same rules, same order
    assert table == rules and len(table) == len(rules)
    assert [(job, kind, amount, mu) for job, kind, amount, mu in table.raw_items()] == [
        (job, r.kind, r.amount, r.min_utility) for job, r in rules.items()]
    job = int(snap.job_ids[7])
    assert table[job] == rules[job] and job in table and 10**9 not in table
    with pytest.raises(KeyError):
        table[10**9]


@pytest.mark.parametrize("with_slo", [False, True])
def test_a_plan_stores_the_same_bytes_with_a_table_or_a_dict_and_reads_back_equal_rules(with_slo: bool) -> None:
    snap = _snapshot(25, 3, with_slo)
    rules = _dict_rules(snap)
    rules[999] = PaymentRule.fixed(12.5)  # a job without a row (an extra rule)
    as_dict = _plan(snap, rules).to_bytes()
    table = budget_payments(snap)
    assert _plan(snap, table).to_bytes() == _plan(snap, dict(table.items())).to_bytes()
    back = Plan.from_bytes(as_dict)
    assert isinstance(back.payments, PaymentTable) and back.payments == rules
    assert list(back.payments) == list(rules)  # rows in order, then the extra
    assert Plan.from_bytes(back.to_bytes()).payments == rules


def test_a_table_refuses_what_a_rule_refuses() -> None:
    ids = np.array([1, 2], dtype=np.int64)
    ok_kind = np.array([0, 0], dtype=np.int8)
    with pytest.raises(ValueError, match="finite and >= 0"):
        PaymentTable(ids, ok_kind, np.array([1.0, -1.0]), np.full(2, np.nan))
    with pytest.raises(ValueError, match="finite and >= 0"):
        PaymentTable(ids, ok_kind, np.array([1.0, np.inf]), np.full(2, np.nan))
    with pytest.raises(ValueError, match="min_utility"):
        PaymentTable(ids, np.array([1, 0], dtype=np.int8), np.ones(2), np.full(2, np.nan))
    with pytest.raises(ValueError, match="min_utility"):
        PaymentTable(ids, ok_kind, np.ones(2), np.array([np.nan, 0.5]))
    with pytest.raises(ValueError, match="unknown payment kind"):
        PaymentTable(ids, np.array([0, 7], dtype=np.int8), np.ones(2), np.full(2, np.nan))
    no_rule = PaymentTable(ids, np.array([-1, 0], dtype=np.int8), np.array([np.nan, 3.0]), np.full(2, np.nan))
    assert dict(no_rule.items()) == {2: PaymentRule.at_completion(3.0)}


def _table(rows: list[tuple[int, int, float, float]]) -> PaymentTable:
    """A table of (job, kind index or -1, amount, SLO) rows; the SLO kept only on if_slo_met rows."""
    kind = np.array([k for _, k, _, _ in rows], dtype=np.int8)
    mu = np.array([u if k == 1 else math.nan for _, k, _, u in rows], dtype=np.float64)
    return PaymentTable(np.array([j for j, _, _, _ in rows], dtype=np.int64), kind,
                        np.array([a for _, _, a, _ in rows], dtype=np.float64), mu)


_ROWS = st.lists(st.tuples(st.integers(0, 12), st.integers(-1, 2), st.sampled_from([0.0, 1.0, 2.5, 100.0]),
                           st.sampled_from([0.5, 1.0, 2.0])), max_size=14, unique_by=lambda row: row[0])


@settings(max_examples=300, deadline=None)
@given(previous=_ROWS, current=_ROWS, touched=st.sets(st.integers(0, 14), max_size=5))
def test_visit_rows_in_plain_python_are_numpys(previous: list[tuple[int, int, float, float]],
                                               current: list[tuple[int, int, float, float]], touched: set[int]) -> None:
    """The rows a rule holder reads again (changed since the previous table, fixed prices, touched
    jobs): the plain comparison of small tables gives numpy's positions' entries, in order."""
    old, new = _table(previous), _table(current)
    want = new.visit_rows_arrays(old, touched)
    assert new.visit_rows(old, touched) == want
    changed = set(new.changed_rows(old).tolist())
    assert [row[0] for row in want] == [j for k, (j, kind, amount, _) in enumerate(current) if kind >= 0 and (
        k in changed or (kind == 2 and amount > 0) or j in touched)]
