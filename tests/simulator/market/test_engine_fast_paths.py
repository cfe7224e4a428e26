"""The market engine's fast paths give what the paths they replaced gave: the snapshot's
warm start gathered from a newer Plan in one step (row by row before), its bid columns
gathered by row from the engine's arrays (bid by bid before), and the payment rules of
a Plan taken from its table without building a rule per unchanged job (a rule object per
job before)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from scheduler.payments import PaymentRule, PaymentTable
from scheduler.registry import MECHANISMS
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec

TREE = QueueTree.from_paths({"root.a.x": 2.0, "root.a.y": 1.0, "root.b.z": 1.0})
CONFIG = MarketConfig("abacus", "hltrf", "stride", 0.5, 1e-6, 1000, 30.0, "forever", float("inf"))


def _engine(n: int, seed: int) -> MarketEngine:
    rng = np.random.default_rng(seed)
    engine = MarketEngine.create([10, 5], TREE, CONFIG, seed=seed)
    for i in range(n):
        slo = float(rng.uniform(0.1, 1.0)) if i % 4 == 0 else None
        spec = JobSpec(100 + i, i % 3, (int(rng.integers(1, 9)), int(rng.integers(0, 3))), (10.0, 20.0), 0.0)
        weights = tuple(float(w) for w in rng.uniform(0.5, 2.0, 2))
        engine.submit(spec, Bid(float(rng.uniform(50, 200)), weights, "log" if i % 2 else "linear", slo))
    engine.step(0.0)
    return engine


def test_the_warm_start_from_a_newer_plan_is_its_rows_and_nan_for_jobs_it_lacks() -> None:
    engine = _engine(30, 0)
    plan, _ = engine.clear()
    newer = engine.snapshot()  # a newer Plan that lacks the first three jobs and covers one job the engine lacks
    keep = np.arange(3, newer.n)
    ids = np.append(plan.job_ids[keep], 999)
    subs = np.vstack([plan.sub_budgets[keep] * 1.5, [[7.0, 8.0]]])
    warm_plan = type(plan)(job_ids=ids, shares=np.vstack([plan.shares[keep], [[0.0, 0.0]]]), sub_budgets=subs,
                           payments={}, diagnostics=plan.diagnostics)
    snap = engine.snapshot(warm=warm_plan)
    by_job = {int(j): subs[k] for k, j in enumerate(ids.tolist())}
    want = np.array([by_job.get(int(j), np.full(2, np.nan)) for j in snap.job_ids.tolist()])  # row by row, as before
    assert snap.warm_start is not None
    np.testing.assert_array_equal(snap.warm_start, want)
    np.testing.assert_array_equal(snap.job_ids, newer.job_ids)


def test_rules_from_a_table_are_the_rules_of_the_same_dict() -> None:
    state = json.loads(json.dumps(_engine(24, 1).to_state()))
    by_table, by_dict = (MarketEngine.from_state(TREE, state) for _ in range(2))
    plan = by_table.with_bookings(by_table.clear()[0])
    assert isinstance(plan.payments, PaymentTable)
    rules = dict(plan.payments.items())
    fixed = sorted(rules)[5]
    rules[fixed] = PaymentRule.fixed(33.0)  # a rule that changes, with a charge due at acceptance
    table = PaymentTable(plan.payments.ids, plan.payments.kind.copy(), plan.payments.amount.copy(),
                         plan.payments.min_utility.copy())
    row = int(np.flatnonzero(table.ids == fixed)[0])
    table.kind[row], table.amount[row] = 2, 33.0
    assert dict(table.items()) == rules
    charges_table = by_table.apply_plan(replace(plan, payments=table))
    charges_dict = by_dict.apply_plan(replace(plan, payments=rules))
    assert charges_table == charges_dict and [c.job_id for c in charges_table] == [fixed]
    assert {j: by_table.rule_of(j) for j in by_table.known_jobs()} == {j: by_dict.rule_of(j) for j in by_dict.known_jobs()}
    assert by_table.to_state() == by_dict.to_state()


def test_the_share_table_is_current_shares_as_arrays() -> None:
    engine = _engine(30, 2)
    assert engine.share_table().ids.size == 0  # no Plan yet: nothing in force
    engine.clear()
    for _ in range(3):
        engine.step(engine.now + 15.0)
        table, shares = engine.share_table(), engine.current_shares()
        assert table.ids.tolist() == list(shares)
        assert table.arrival.tolist() == [a for a, _ in shares.values()]
        np.testing.assert_array_equal(table.shares, np.array([s for _, s in shares.values()]).reshape(-1, 2))
        engine.clear()


def test_the_snapshot_gathered_by_column_is_the_one_gathered_by_row() -> None:
    from simulator.market.snapshot import Columns, build_snapshot

    engine = _engine(30, 3)
    engine.clear()
    engine.step(engine.now + 20.0)
    engine.submit(JobSpec(999, 1, (3, 1), (10.0, 20.0), engine.now), Bid(80.0, (1.0, 0.5)))  # no sub-budget yet
    reserved = set(engine.known_jobs()[::5])
    snap = engine.snapshot(exclude=reserved)
    rows = Columns()
    for job in engine.cluster.active_states():  # row by row, as before
        if job.spec.job_id not in reserved:
            books = engine._books[job.spec.job_id]
            rows.add(job.spec.job_id, job.spec.leaf, books.bid, job.demand(), engine._shares.sub(books.row))
    want = build_snapshot(rows, None, engine.config, engine._auction_capacity())
    for name in ("job_ids", "group", "budgets", "weights", "demand", "min_utility", "capacity"):
        np.testing.assert_array_equal(getattr(snap, name), getattr(want, name))
    start = np.array([np.full(2, np.nan) if sub is None else sub for sub in rows.subs])  # the warm start, as before
    assert 999 in snap.job_ids.tolist() and np.isnan(start).any()
    np.testing.assert_array_equal(snap.warm_start, start)
    assert snap.utility == want.utility and snap.n == len(engine.known_jobs()) - len(reserved)


def test_rules_taken_from_the_rows_that_changed_are_the_rules_taken_from_every_row() -> None:
    fast, full = _engine(24, 4), _engine(24, 4)
    rng = np.random.default_rng(4)
    from scheduler.plan import Reservation

    for round_ in range(6):
        plan = fast.with_bookings(MECHANISMS.build("abacus").clear(fast.snapshot()))
        table = plan.payments
        assert isinstance(table, PaymentTable)
        kind, amount, slo = table.kind.copy(), table.amount.copy(), table.min_utility.copy()
        for row in rng.choice(table.ids.size, 4, replace=False).tolist():  # some rules change kind, amount or SLO
            choice = int(rng.integers(3))
            kind[row], amount[row] = choice, float(rng.choice([0.0, 12.5, amount[row]]))
            slo[row] = 0.3 if choice == 1 else np.nan
        # job 700 has a fixed price in every Plan and arrives after the second: due when the third applies
        ids, kind, amount, slo = (np.append(a, v) for a, v in ((table.ids, 700), (kind, 2), (amount, 7.0), (slo, np.nan)))
        changed = replace(plan, payments=PaymentTable(ids, kind.astype(np.int8), amount, slo))
        full._ruled = None  # the reference visits every row
        charges = fast.apply_plan(changed)
        assert charges == full.apply_plan(changed)
        assert (700 in [c.job_id for c in charges]) == (round_ == 2)
        assert {j: fast.rule_of(j) for j in fast.known_jobs()} == {j: full.rule_of(j) for j in full.known_jobs()}
        for engine in (fast, full):  # an arrival and a booking between two Plans
            engine.submit(JobSpec(500 + round_, round_ % 3, (2, 1), (10.0, 20.0), engine.now), Bid(60.0, (1.0, 1.0)))
            if round_ == 1:
                engine.submit(JobSpec(700, 0, (2, 0), (10.0, 20.0), engine.now), Bid(60.0, (1.0, 1.0)))
            if round_ == 2:
                engine.book(Reservation(engine.known_jobs()[0], 0, 1, engine.now, engine.now + 50.0), 9.0)
            engine.step(engine.now + 10.0)
    assert fast.to_state() == full.to_state()


def _bid_by_bid(engine: MarketEngine) -> dict[str, object]:
    """The snapshot's bid columns read job by job from the books (as the snapshot read them before)."""
    states = engine.cluster.active_states()
    bids = [engine._books[job.spec.job_id].bid for job in states]
    slo = [math.nan if b.min_utility is None else b.min_utility for b in bids]
    return {
        "job_ids": np.array([job.spec.job_id for job in states], dtype=np.int64),
        "budgets": np.array([b.budget for b in bids], dtype=np.float64),
        "weights": np.array([b.weights for b in bids], dtype=np.float64).reshape(-1, engine.m),
        "utility": tuple(b.utility for b in bids),
        "demand": np.array([job.demand() for job in states], dtype=np.bool_).reshape(-1, engine.m),
        "min_utility": None if all(math.isnan(x) for x in slo) else np.array(slo, dtype=np.float64),
    }


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["submit", "cancel", "step", "clear", "restore"]), st.integers(0, 10**6)),
                min_size=1, max_size=25))
def test_the_bid_columns_are_the_books_bids_after_any_history(ops: list[tuple[str, int]]) -> None:
    engine, next_id = _engine(6, 3), 200
    for op, draw in ops:
        rng = np.random.default_rng(draw)
        if op == "submit":
            spec = JobSpec(next_id, draw % 3, (int(rng.integers(1, 5)), int(rng.integers(0, 3))), (10.0, 20.0), engine.now)
            slo = float(rng.uniform(0.1, 1.0)) if draw % 3 == 0 else None
            engine.submit(spec, Bid(float(rng.uniform(1, 300)), tuple(float(w) for w in rng.uniform(0, 3, 2)),
                                    "log" if draw % 2 else "linear", slo))
            next_id += 1
        elif op == "cancel" and engine.cluster.active_states():
            states = engine.cluster.active_states()
            engine.cancel(states[draw % len(states)].spec.job_id)
        elif op == "step":
            engine.step(engine.now + float(draw % 40))
        elif op == "clear":
            engine.clear()
        elif op == "restore":
            engine = MarketEngine.from_state(TREE, json.loads(json.dumps(engine.to_state())))
        snap, want = engine.snapshot(), _bid_by_bid(engine)
        for name, value in want.items():
            got = getattr(snap, name)
            if isinstance(value, np.ndarray):
                assert got.dtype == value.dtype and got.shape == value.shape and got.tobytes() == value.tobytes(), name
            else:
                assert got == value, name


def test_the_warm_start_from_a_newer_plan_of_the_first_rows_is_its_rows_then_nan() -> None:
    engine = _engine(30, 4)
    plan, _ = engine.clear()
    later = [(JobSpec(500 + k, k % 3, (2, 1), (10.0, 20.0), engine.now), Bid(50.0 + k, (1.0, 2.0))) for k in range(3)]
    subs = plan.sub_budgets * 1.25  # a newer Plan of the same rows, as a clearing between two ticks stores
    newer = type(plan)(job_ids=plan.job_ids, shares=plan.shares, sub_budgets=subs, payments={}, diagnostics=plan.diagnostics)
    for extra in ([], later):
        snap = engine.snapshot(extra, warm=newer)
        by_job = {int(j): subs[k] for k, j in enumerate(plan.job_ids.tolist())}
        want = np.array([by_job.get(int(j), np.full(2, np.nan)) for j in snap.job_ids.tolist()])  # row by row
        assert snap.warm_start is not None and snap.n == plan.n + len(extra)
        assert snap.warm_start.tobytes() == want.tobytes()
