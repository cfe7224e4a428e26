"""MLRF / LTRF / H-LTRF allocator (paper 002, Sections 5-6).

Worked examples: Table 1 and the Sec. 5.2.1 starvation example (Fig. 2).
Properties: Theorem 1 against independent exact-arithmetic references,
work conservation, long-run weights, Eq. 7, unknown durations (Sec. 6.2.1),
state round-trip, validation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from scheduler.fairshare.allocator import POLICIES, FairShareAllocator
from scheduler.fairshare.fairness import QueueTree, twait_guidance
from scheduler.fairshare.unit_tasks import allocate_rounds

PROPERTY = settings(max_examples=60, deadline=None)
FIG1B = {"root.G1.A": 1.0, "root.G1.B": 1.0, "root.G2.C": 1.0, "root.G2.D": 1.0}


# --------------------------------------------------------------------------- helpers


def _pending_before(new: NDArray[np.int64], alloc: NDArray[np.int64]) -> NDArray[np.int64]:
    """(T, L) total demand at each step: new demand plus unserved demand carried over."""
    carried = np.vstack([np.zeros((1, new.shape[1]), dtype=np.int64), np.cumsum(new - alloc, 0)[:-1]])
    return carried + new


@st.composite
def trees(draw: st.DrawFn, max_nodes: int = 9) -> QueueTree:
    """Random valid trees with integer weights, node indices shuffled (parents may
    have larger indices than their children)."""
    n = draw(st.integers(2, max_nodes))
    parent = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    perm = draw(st.permutations(range(n)))
    new_parent = [0] * n
    for old, p in enumerate(parent):
        new_parent[perm[old]] = -1 if p < 0 else perm[p]
    weight = tuple(float(draw(st.integers(1, 4))) for _ in range(n))
    return QueueTree(tuple(f"q{i}" for i in range(n)), tuple(new_parent), weight)


class _Exact:
    """Independent exact (Fraction) view of a tree for reference allocators."""

    def __init__(self, tree: QueueTree) -> None:
        n = len(tree.names)
        self.parent = list(tree.parent)
        self.w = [Fraction(int(x)) for x in tree.weight]
        self.kids = [[j for j in range(n) if self.parent[j] == i] for i in range(n)]
        self.leaves = [i for i in range(n) if not self.kids[i]]
        self.pos = {node: k for k, node in enumerate(self.leaves)}
        self.root = self.parent.index(-1)

    def below(self, i: int) -> list[int]:
        """Leaf positions under node i."""
        if not self.kids[i]:
            return [self.pos[i]]
        return [p for c in self.kids[i] for p in self.below(c)]

    def frac(self, i: int) -> Fraction:
        p = self.parent[i]
        if p < 0:
            return Fraction(1)
        return self.frac(p) * self.w[i] / sum(self.w[j] for j in self.kids[p])

    def ltrf(self, usage: list[Fraction], running: list[int], mask: list[bool]) -> int:
        """Alg. 1 line 6: smallest u_i / w_i among demanding users, ties lowest position."""
        cands = [k for k in range(len(mask)) if mask[k]]
        return min(cands, key=lambda k: (usage[k] / self.frac(self.leaves[k]), k), default=-1)

    def mlrf(self, usage: list[Fraction], running: list[int], mask: list[bool]) -> int:
        cands = [k for k in range(len(mask)) if mask[k]]
        return min(cands, key=lambda k: (running[k] / self.frac(self.leaves[k]), k), default=-1)

    def naive(self, usage: list[Fraction], running: list[int], mask: list[bool]) -> int:
        """Sec. 5.2.1: top-down, demanding child with the smallest usage / weight."""
        node = self.root
        while self.kids[node]:
            cands = [c for c in self.kids[node] if any(mask[p] for p in self.below(c))]
            if not cands:
                return -1
            node = min(
                cands,
                key=lambda c: (sum(usage[p] for p in self.below(c)) / self.w[c], min(self.below(c))),
            )
        return self.pos[node]


Reference = Callable[[list[Fraction], list[int], list[bool]], int]


def _lockstep(
    tree: QueueTree,
    capacity: int,
    arrivals: list[list[int]],
    durations: list[int],
    allocators: list[FairShareAllocator],
    reference: Reference,
) -> int:
    """Drive allocators and a reference on the same integer-time workload; every pick
    must agree. Tasks of leaf k last durations[k] steps and are recorded with that
    expected duration. Returns the number of picks compared."""
    n_leaves = len(tree.leaves)
    pending, running_n = [0] * n_leaves, [0] * n_leaves
    usage = [Fraction(0)] * n_leaves
    running: dict[int, tuple[int, int]] = {}
    key = picks = 0
    for t in range(len(arrivals) + 40):
        for k, (end, leaf) in list(running.items()):
            if end == t:
                del running[k]
                running_n[leaf] -= 1
                for a in allocators:
                    a.record_finish(k, float(t))
        if t < len(arrivals):
            pending = [p + a for p, a in zip(pending, arrivals[t], strict=True)]
        for _ in range(capacity - len(running)):
            mask = [p > 0 for p in pending]
            want = reference(usage, running_n, mask)
            got = [a.pick_leaf(np.array(mask), float(t)) for a in allocators]
            assert got == [want] * len(allocators), f"t={t} usage={usage} mask={mask}"
            picks += 1
            if want < 0:
                break
            for a in allocators:
                a.record_start(key, want, float(t), expected_duration=float(durations[want]))
            running[key] = (t + durations[want], want)
            running_n[want] += 1
            usage[want] += durations[want]
            pending[want] -= 1
            key += 1
    return picks


Workload = tuple[QueueTree, int, list[list[int]], list[int]]  # tree, capacity, arrivals, durations


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    tree = draw(trees())
    n_leaves = len(tree.leaves)
    row = st.lists(st.integers(0, 4), min_size=n_leaves, max_size=n_leaves)
    arrivals = draw(st.lists(row, min_size=1, max_size=10))
    durations = draw(st.lists(st.integers(1, 3), min_size=n_leaves, max_size=n_leaves))
    return tree, draw(st.integers(1, 6)), arrivals, durations


# --------------------------------------------------------------------------- Table 1

TABLE1_NEW = np.array([[20, 100], [40, 60], [80, 50], [60, 50]])


@pytest.mark.parametrize(
    ("policy", "alloc_a", "alloc_b", "total_demand_a", "total_demand_b"),
    [
        pytest.param("mlrf", [20, 40, 50, 50], [80, 60, 50, 50], [20, 40, 80, 90], [100, 80, 70, 70], id="table1a-mlrf"),
        pytest.param("ltrf", [20, 40, 80, 60], [80, 60, 20, 40], [20, 40, 80, 60], [100, 80, 70, 100], id="table1b-ltrf"),
        pytest.param("hltrf", [20, 40, 80, 60], [80, 60, 20, 40], [20, 40, 80, 60], [100, 80, 70, 100], id="flat-hltrf-is-ltrf"),
    ],
)
def test_table1(
    policy: str, alloc_a: list[int], alloc_b: list[int], total_demand_a: list[int], total_demand_b: list[int]
) -> None:
    # given: 100 units, A and B of equal weight, unit tasks of one time unit (paper 002, Table 1)
    tree = QueueTree.flat(["A", "B"])
    # when
    out = allocate_rounds(tree, 100, TABLE1_NEW, policy=policy, t_wait=3.0)
    # then: the "Current" allocation and the carried-over "Total" demand columns
    assert out[:, 0].tolist() == alloc_a
    assert out[:, 1].tolist() == alloc_b
    total = _pending_before(TABLE1_NEW, out)
    assert total[:, 0].tolist() == total_demand_a
    assert total[:, 1].tolist() == total_demand_b


def test_table1_totals_ltrf_equalises_mlrf_does_not() -> None:
    tree = QueueTree.flat(["A", "B"])
    assert allocate_rounds(tree, 100, TABLE1_NEW, policy="mlrf").sum(0).tolist() == [160, 240]
    assert allocate_rounds(tree, 100, TABLE1_NEW, policy="ltrf").sum(0).tolist() == [200, 200]


# --------------------------------------------------------------------------- Sec. 5.2.1


def _starvation_example(t_wait: float) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Fig. 1b, 12 units, first demands 200,10,50,60; second wave 20,60,40,80 at the
    first step at which the first demands are all served. Returns (alloc, new, t2)."""
    tree = QueueTree.from_paths(FIG1B)
    first = np.zeros((60, 4), dtype=np.int64)
    first[0] = [200, 10, 50, 60]
    phase1 = allocate_rounds(tree, 12, first, policy="hltrf", t_wait=t_wait)
    t2 = int(np.flatnonzero(phase1.sum(1))[-1]) + 1
    new = np.zeros((t2 + 40, 4), dtype=np.int64)
    new[0], new[t2] = [200, 10, 50, 60], [20, 60, 40, 80]
    return allocate_rounds(tree, 12, new, policy="hltrf", t_wait=t_wait), new, t2


def test_fig2_naive_first_phase_matches_paper() -> None:
    alloc, _, t2 = _starvation_example(math.inf)
    assert alloc[:3].tolist() == [[3, 3, 3, 3]] * 3  # 3 each until the 3rd time unit
    assert alloc[3].tolist() == [5, 1, 3, 3]  # B needs only one more
    assert alloc[4:16].tolist() == [[6, 0, 3, 3]] * 12
    assert alloc[16].tolist() == [6, 0, 2, 4]  # C needs only two
    assert alloc[:t2].sum(0).tolist() == [200, 10, 50, 60]
    assert t2 == 27  # the new demands arrive at the 28th time unit


def test_naive_hierarchy_starves_b() -> None:
    alloc, _, t2 = _starvation_example(math.inf)
    first_b = int(np.flatnonzero(alloc[t2:, 1])[0])
    assert first_b >= (210 - 110) // 12  # at least 8 time units (paper: |(210-110)/12|)
    assert alloc[t2 : t2 + first_b, :2].sum() == 0  # G1 gets nothing meanwhile


@pytest.mark.parametrize("t_wait", [1.0, 2.0, 4.0])
def test_hltrf_bounds_b_wait(t_wait: float) -> None:
    alloc, new, t2 = _starvation_example(t_wait)
    pending_b = _pending_before(new, alloc)[:, 1]
    served = np.flatnonzero(alloc[t2:, 1])
    assert served[0] <= t_wait + 1
    # while B still has pending tasks, it never waits longer than T_wait plus one slot
    last_needed = int(np.flatnonzero(pending_b[t2:])[-1])
    gaps = np.diff(served[served <= last_needed])
    assert gaps.size > 0 and gaps.max() <= t_wait + 1


def test_twait_zero_gives_b_everything_first() -> None:
    alloc, _, t2 = _starvation_example(0.0)
    assert alloc[t2].tolist() == [0, 12, 0, 0]  # plain LTRF: B has by far the lowest usage


# --------------------------------------------------------------------------- Theorem 1


@PROPERTY
@given(workloads())
def test_ltrf_matches_algorithm1(case: Workload) -> None:
    tree, cap, arrivals, durations = case
    alloc = FairShareAllocator(tree, policy="ltrf")
    assert _lockstep(tree, cap, arrivals, durations, [alloc], _Exact(tree).ltrf) > 0


@PROPERTY
@given(workloads())
def test_mlrf_matches_memoryless_reference(case: Workload) -> None:
    tree, cap, arrivals, durations = case
    alloc = FairShareAllocator(tree, policy="mlrf")
    _lockstep(tree, cap, arrivals, durations, [alloc], _Exact(tree).mlrf)


@PROPERTY
@given(workloads())
def test_theorem1_twait_zero_is_ltrf(case: Workload) -> None:
    tree, cap, arrivals, durations = case
    allocs = [FairShareAllocator(tree, policy="hltrf", t_wait=0.0), FairShareAllocator(tree, policy="ltrf")]
    _lockstep(tree, cap, arrivals, durations, allocs, _Exact(tree).ltrf)


@PROPERTY
@given(workloads())
def test_theorem1_twait_inf_is_naive(case: Workload) -> None:
    tree, cap, arrivals, durations = case
    alloc = FairShareAllocator(tree, policy="hltrf", t_wait=math.inf)
    _lockstep(tree, cap, arrivals, durations, [alloc], _Exact(tree).naive)


@PROPERTY
@given(workloads(), st.sampled_from([0.0, 1.0, 2.5, math.inf]))
def test_flat_hltrf_is_ltrf_for_any_twait(
    case: Workload, t_wait: float
) -> None:
    tree, cap, arrivals, durations = case
    flat = QueueTree.flat([f"u{k}" for k in range(len(tree.leaves))], [k % 3 + 1 for k in range(len(tree.leaves))])
    alloc = FairShareAllocator(flat, policy="hltrf", t_wait=t_wait)
    _lockstep(flat, cap, arrivals, durations, [alloc], _Exact(flat).ltrf)


# --------------------------------------------------------------------------- work conservation, weights


@PROPERTY
@given(workloads(), st.sampled_from([p for p in POLICIES if p != "static"]), st.sampled_from([0.0, 1.0, 2.5, math.inf]))
def test_work_conserving(
    case: Workload, policy: str, t_wait: float
) -> None:
    tree, cap, arrivals, _ = case
    new = np.array(arrivals + [[0] * len(tree.leaves)] * 10, dtype=np.int64)
    out = allocate_rounds(tree, cap, new, policy=policy, t_wait=t_wait)
    before = _pending_before(new, out)
    assert (out <= before).all() and (out >= 0).all()
    assert out.sum(1).tolist() == np.minimum(cap, before.sum(1)).tolist()


WEIGHTED = {"root.g1.a": 1.0, "root.g1.b": 3.0, "root.g2.c": 2.0, "root.g2.d": 1.0, "root.e": 2.0, "root.g2": 2.0}


@pytest.mark.parametrize(
    ("policy", "t_wait"),
    [("ltrf", 0.0), ("hltrf", 0.0), ("hltrf", 3.0), ("hltrf", math.inf)],
)
def test_long_run_usage_follows_weights(policy: str, t_wait: float) -> None:
    tree = QueueTree.from_paths(WEIGHTED)
    new = np.zeros((400, len(tree.leaves)), dtype=np.int64)
    new[0] = 10**6  # always demanding
    out = allocate_rounds(tree, 10, new, policy=policy, t_wait=t_wait)
    share = out.sum(0) / out.sum()
    assert np.abs(share - tree.leaf_fraction()).max() < 0.005


def test_mlrf_is_weighted_max_min_at_every_step() -> None:
    tree = QueueTree.from_paths(WEIGHTED)
    frac = tree.leaf_fraction()
    new = np.zeros((3, len(tree.leaves)), dtype=np.int64)
    new[0] = 10**6
    for units in allocate_rounds(tree, 10, new, policy="mlrf"):
        # no unit could move from i to j and lower the larger of the two ratios
        assert ((units[:, None] - 1) / frac[:, None] <= units[None, :] / frac[None, :] + 1e-9).all()
        assert (np.abs(units - 10 * frac) <= 1.0).all()


# --------------------------------------------------------------------------- Eq. 7


def _starved_running(t_task: float, t_wait: float, seed: int = 0) -> float:
    """Mean running tasks of a starved leaf during its starvation period (Sec. 7.6).

    Tree G1={big, starved}, G2={busy}, 20 units, time in ticks of 0.25. Big runs
    alone for 200 time units, so G2 is then favoured for ~200 more; meanwhile
    only the starvation rule gives units to 'starved' (tasks of t_task)."""
    tree = QueueTree.from_paths({"root.g1.big": 1, "root.g1.starved": 1, "root.g2.busy": 1})
    alloc = FairShareAllocator(tree, policy="hltrf", t_wait=t_wait)
    rng = np.random.default_rng(seed)
    dt, running, samples, key = 0.25, {}, [], 0
    for tick in range(int(350 / dt)):
        now = tick * dt
        for k in [k for k, end in running.items() if end <= tick]:
            alloc.record_finish(k, now)
            del running[k]
        mask = np.array([now < 200, now >= 200, now >= 200])
        for _ in range(20 - len(running)):
            leaf = alloc.pick_leaf(mask, now)
            dur = t_task if leaf == 1 else float(rng.choice([0.5, 0.75, 1.0, 1.25, 1.5]))
            alloc.record_start(key, leaf, now, expected_duration=dur)
            running[key], key = tick + round(dur / dt), key + 1
        if now >= 200 + t_task:
            samples.append(int(alloc.running()[1]))
    return float(np.mean(samples))


@pytest.mark.parametrize(("t_task", "t_wait"), [(10.0, 2.0), (10.0, 2.5), (10.0, 5.0), (4.0, 1.0), (12.0, 4.0)])
def test_eq7_running_tasks_of_starved_queue(t_task: float, t_wait: float) -> None:
    expected = twait_guidance(t_task, t_wait)
    assert _starved_running(t_task, t_wait) == pytest.approx(expected, rel=0.1)


def test_eq7_scenario_is_really_starved_without_timeout() -> None:
    assert _starved_running(10.0, math.inf) == 0.0


# --------------------------------------------------------------------------- unknown durations (Sec. 6.2.1)


def test_running_task_of_unknown_length_counts_max_of_q_and_elapsed() -> None:
    tree = QueueTree.flat(["a", "b"])
    alloc = FairShareAllocator(tree, initial_q=2.0)
    alloc.record_start(1, 0, 0.0)
    assert alloc.usage(0.0)[0] == 2.0  # assumed execution time Q at once
    assert alloc.usage(1.5)[0] == 2.0
    assert alloc.usage(3.0)[0] == 3.0  # running longer than Q: elapsed time
    alloc.record_start(2, 1, 3.0, expected_duration=10.0)
    alloc.record_finish(2, 4.0)  # finished early: actual duration, not the estimate
    assert alloc.usage(4.0)[1] == 1.0


def test_quantum_adapts_bottom_up() -> None:
    tree = QueueTree.from_paths({"root.G1.a": 1, "root.G1.b": 1, "root.G2.c": 1})
    alloc = FairShareAllocator(tree, initial_q=1.0)
    idx = {name: tree.index(name) for name in tree.names}
    assert (alloc.quantum() == 1.0).all()
    durations = np.random.default_rng(7).exponential(5.0, size=300)
    now = 0.0
    for key, d in enumerate(durations):  # one task of unknown length after another in leaf a
        alloc.record_start(key, 0, now)
        now += float(d)
        alloc.record_finish(key, now)
    q = alloc.quantum()
    assert q[idx["root.G1.a"]] == pytest.approx(durations.mean())
    assert q[idx["root.G1.a"]] == pytest.approx(5.0, rel=0.15)  # toward the true mean
    assert q[idx["root.G1.b"]] == q[idx["root.G1"]] == q[idx["root.G1.a"]]  # inherits its group's
    assert q[idx["root.G2.c"]] == q[idx["root.G2"]] == q[idx["root"]]  # no history: from the root


def test_group_quantum_is_mean_of_children_with_history() -> None:
    tree = QueueTree.from_paths({"root.G1.a": 1, "root.G1.b": 1, "root.G2.c": 1})
    alloc = FairShareAllocator(tree, initial_q=1.0)
    for key, leaf in enumerate([0, 0, 1, 2]):
        alloc.record_start(key, leaf, 0.0)
    for key, end in [(2, 2.0), (0, 4.0), (1, 6.0), (3, 9.0)]:  # a: 4 and 6, b: 2, c: 9
        alloc.record_finish(key, end)
    q = alloc.quantum()
    assert q[tree.index("root.G1.a")] == 5.0
    assert q[tree.index("root.G1.b")] == 2.0
    assert q[tree.index("root.G1")] == 3.5
    assert q[tree.index("root.G2")] == 9.0
    assert q[tree.index("root")] == 6.25
    alloc.record_start(99, 1, 10.0)  # unknown length in leaf b: now assumed to last 2
    assert alloc.usage(10.0)[1] == 2.0 + 2.0


# --------------------------------------------------------------------------- rounds (Sec. 6.2.2)


def test_reset_round_forgets_history_but_not_running_tail() -> None:
    tree = QueueTree.flat(["a", "b"])
    alloc = FairShareAllocator(tree, policy="ltrf")
    alloc.record_start(1, 0, 0.0, expected_duration=100.0)
    alloc.record_finish(1, 100.0)
    alloc.record_start(2, 0, 100.0, expected_duration=10.0)
    assert alloc.pick_leaf(np.array([True, True]), 104.0) == 1  # a is far ahead
    alloc.reset_round(104.0)
    # only the 6 expected seconds of task 2 after the round start still count
    assert alloc.usage(104.0).tolist() == [6.0, 0.0]
    alloc.record_finish(2, 108.0)  # ended early: 4 seconds in this round
    assert alloc.usage(108.0).tolist() == [4.0, 0.0]
    alloc.record_start(3, 1, 108.0, expected_duration=5.0)
    assert alloc.pick_leaf(np.array([True, True]), 108.0) == 0  # a lent before the round: forgotten


# --------------------------------------------------------------------------- state

Script = list[tuple[str, float, int, float | None]]


@st.composite
def operation_scripts(draw: st.DrawFn) -> tuple[QueueTree, Script]:
    tree = draw(trees())
    n_leaves = len(tree.leaves)
    ops = []
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["pick", "start", "start", "finish", "reset"]))
        step = float(draw(st.sampled_from([0.0, 0.5, 1.0, 3.0])))
        leaf = draw(st.integers(0, n_leaves - 1))
        exp = draw(st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.5])))
        ops.append((kind, step, leaf, exp))
    return tree, ops


def _apply(alloc: FairShareAllocator, ops: Script, t0: float, seed: int, first_key: int) -> list[object]:
    """Apply a script of operations from time t0; returns every observable output."""
    rng = np.random.default_rng(seed)
    now, out, key = t0, [], first_key
    for kind, step, leaf, exp in ops:
        now += step
        mask = rng.random(len(alloc.tree.leaves)) < 0.6
        running = alloc.to_state()["running"]
        if kind == "pick":
            out.append(alloc.pick_leaf(mask, now))
        elif kind == "start":
            key += 1
            alloc.record_start(key, leaf, now, exp)
        elif kind == "finish" and running:
            alloc.record_finish(running[leaf % len(running)][0], now)
        elif kind == "reset":
            alloc.reset_round(now)
        out.append(alloc.usage(now).round(9).tolist())
        out.append(alloc.waiting(now).round(9).tolist())
    return out


@PROPERTY
@given(operation_scripts(), operation_scripts(), st.sampled_from(POLICIES), st.sampled_from([0.0, 1.0, math.inf]))
def test_state_round_trip_gives_identical_future(
    history: tuple[QueueTree, Script],
    future: tuple[QueueTree, Script],
    policy: str,
    t_wait: float,
) -> None:
    tree, past_ops = history
    n_leaves = len(tree.leaves)
    future_ops = [(k, s, leaf % n_leaves, e) for k, s, leaf, e in future[1]]
    original = FairShareAllocator(tree, policy=policy, t_wait=t_wait, initial_q=1.5)
    _apply(original, past_ops, 0.0, seed=1, first_key=0)
    state = json.loads(json.dumps(original.to_state(), allow_nan=False))  # strict JSON
    restored = FairShareAllocator.from_state(tree, state)
    assert restored.policy == policy and restored.t_wait == t_wait
    t0 = sum(s for _, s, _, _ in past_ops)
    expected = _apply(original, future_ops, t0, seed=2, first_key=10_000)
    assert _apply(restored, future_ops, t0, seed=2, first_key=10_000) == expected


def test_from_state_rejects_other_tree() -> None:
    state = FairShareAllocator(QueueTree.flat(["a", "b"])).to_state()
    with pytest.raises(ValueError):
        FairShareAllocator.from_state(QueueTree.flat(["a", "c"]), state)


# --------------------------------------------------------------------------- QueueTree


def test_from_paths_builds_named_hierarchy_and_fractions() -> None:
    tree = QueueTree.from_paths({"root.g1.a": 1, "root.g1.b": 3, "root.g2": 2})
    assert tree.names == ("root", "root.g1", "root.g1.a", "root.g1.b", "root.g2")
    assert tree.leaf_names == ("root.g1.a", "root.g1.b", "root.g2")
    assert tree.weight[tree.index("root.g1")] == 1.0  # intermediate node: weight 1
    assert tree.leaf_fraction() == pytest.approx([1 / 12, 3 / 12, 2 / 3])


def test_flat_tree() -> None:
    tree = QueueTree.flat(["A", "B", "C"], [1, 1, 2])
    assert tree.leaf_names == ("A", "B", "C") and tree.names[tree.root] == "root"
    assert tree.leaf_fraction().tolist() == [0.25, 0.25, 0.5]


@PROPERTY
@given(trees())
def test_fractions_are_consistent(tree: QueueTree) -> None:
    leaf = tree.leaf_fraction()
    node = tree.node_fraction()
    assert (leaf > 0).all() and leaf.sum() == pytest.approx(1.0)
    assert tree.aggregate(leaf) == pytest.approx(node)  # a group's fraction = its children's
    exact = _Exact(tree)
    assert leaf == pytest.approx([float(exact.frac(i)) for i in exact.leaves])


@pytest.mark.parametrize(
    ("names", "parent", "weight"),
    [
        pytest.param((), (), (), id="empty"),
        pytest.param(("r", "a"), (-1,), (1.0, 1.0), id="length-mismatch"),
        pytest.param(("r", "a", "a"), (-1, 0, 0), (1.0, 1.0, 1.0), id="duplicate-names"),
        pytest.param(("r", ""), (-1, 0), (1.0, 1.0), id="empty-name"),
        pytest.param(("r", "s"), (-1, -1), (1.0, 1.0), id="two-roots"),
        pytest.param(("a", "b"), (1, 0), (1.0, 1.0), id="no-root-cycle"),
        pytest.param(("r", "a", "b"), (-1, 2, 1), (1.0, 1.0, 1.0), id="cycle-beside-root"),
        pytest.param(("r", "a"), (-1, 1), (1.0, 1.0), id="self-parent"),
        pytest.param(("r", "a"), (-1, 5), (1.0, 1.0), id="parent-out-of-range"),
        pytest.param(("r", "a"), (-1, 0.0), (1.0, 1.0), id="float-parent"),
        pytest.param(("r", "a"), (-1, 0), (1.0, 0.0), id="zero-weight"),
        pytest.param(("r", "a"), (-1, 0), (1.0, -2.0), id="negative-weight"),
        pytest.param(("r", "a"), (-1, 0), (1.0, math.nan), id="nan-weight"),
        pytest.param(("r", "a"), (-1, 0), (1.0, math.inf), id="inf-weight"),
    ],
)
def test_queue_tree_validation(names: tuple[str, ...], parent: tuple[int, ...], weight: tuple[float, ...]) -> None:
    with pytest.raises(ValueError):
        QueueTree(names, parent, weight)


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: QueueTree.from_paths({"a.x": 1, "b.y": 1}), id="paths-two-roots"),
        pytest.param(lambda: QueueTree.from_paths({"root..x": 1}), id="paths-empty-component"),
        pytest.param(lambda: QueueTree.from_paths({}), id="paths-empty"),
        pytest.param(lambda: QueueTree.from_paths({"root.a": 0}), id="paths-zero-weight"),
        pytest.param(lambda: QueueTree.flat([]), id="flat-empty"),
        pytest.param(lambda: QueueTree.flat(["root"]), id="flat-name-clash"),
        pytest.param(lambda: QueueTree.flat(["a", "b"], [1]), id="flat-weights-length"),
    ],
)
def test_queue_tree_constructor_errors(build: Callable[[], QueueTree]) -> None:
    with pytest.raises(ValueError):
        build()


# --------------------------------------------------------------------------- allocator errors


def test_allocator_rejects_bad_arguments() -> None:
    tree = QueueTree.flat(["a", "b"])
    with pytest.raises(ValueError):
        FairShareAllocator(tree, policy="drf")
    with pytest.raises(ValueError):
        FairShareAllocator(tree, t_wait=-1.0)
    with pytest.raises(ValueError):
        FairShareAllocator(tree, initial_q=0.0)
    alloc = FairShareAllocator(tree)
    with pytest.raises(ValueError):
        alloc.policy = "fifo"
    with pytest.raises(ValueError):
        alloc.pick_leaf(np.array([True]), 0.0)  # wrong shape
    alloc.record_start(1, 0, 5.0)
    with pytest.raises(ValueError):
        alloc.record_start(1, 1, 5.0)  # duplicate key
    with pytest.raises(ValueError):
        alloc.record_start(2, 2, 5.0)  # no such leaf
    with pytest.raises(ValueError):
        alloc.record_start(3, 0, 5.0, expected_duration=-1.0)
    with pytest.raises(ValueError):
        alloc.pick_leaf(np.array([True, True]), 4.0)  # time went backwards
    with pytest.raises(KeyError):
        alloc.record_finish(42, 6.0)


def test_nobody_demanding_gives_minus_one() -> None:
    for policy in POLICIES:
        alloc = FairShareAllocator(QueueTree.from_paths(FIG1B), policy=policy, t_wait=1.0)
        assert alloc.pick_leaf(np.zeros(4, dtype=bool), 0.0) == -1


def test_settable_policy_and_twait_take_effect() -> None:
    tree = QueueTree.flat(["a", "b"])
    alloc = FairShareAllocator(tree, policy="ltrf")
    alloc.record_start(1, 0, 0.0, expected_duration=10.0)
    alloc.record_finish(1, 10.0)
    alloc.record_start(2, 1, 10.0, expected_duration=1.0)
    alloc.record_start(3, 1, 10.0, expected_duration=1.0)
    both = np.array([True, True])
    assert alloc.pick_leaf(both, 10.0) == 1  # b used less in total
    alloc.policy = "mlrf"
    assert alloc.pick_leaf(both, 10.0) == 0  # a holds fewer units right now
    alloc.t_wait = math.inf
    assert alloc.t_wait == math.inf
