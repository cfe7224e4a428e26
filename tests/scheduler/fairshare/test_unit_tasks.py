"""``scheduler.fairshare.allocator.unit_task_schedule``: the paper's discrete model (paper 002).

Worked examples: Table 1 (Sec. 5.1) and the starvation example (Sec. 5.2.1,
Fig. 2). Oracle: a straightforward exact (Fraction) re-implementation
written from the issue's wording, on random nested trees (hypothesis).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.unit_tasks import unit_task_schedule

TABLE1 = {0: {"A": 20, "B": 100}, 1: {"A": 40, "B": 60}, 2: {"A": 80, "B": 50}, 3: {"A": 60, "B": 50}}
FIG1B = {"G1": ["A", "B"], "G2": ["C", "D"]}


def _column(out: list[dict[str, int]], leaf: str) -> list[int]:
    return [row[leaf] for row in out]


# --------------------------------------------------------------------------- Table 1


@pytest.mark.parametrize("tree", [["A", "B"], {"root": ["A", "B"]}], ids=["flat-list", "one-group"])
@pytest.mark.parametrize(
    ("policy", "alloc_a", "alloc_b"),
    [
        pytest.param("mlrf", [20, 40, 50, 50], [80, 60, 50, 50], id="table1a-mlrf"),
        pytest.param("ltrf", [20, 40, 80, 60], [80, 60, 20, 40], id="table1b-ltrf"),
        pytest.param("hltrf", [20, 40, 80, 60], [80, 60, 20, 40], id="flat-hltrf-is-ltrf"),
        pytest.param("static", [20, 40, 50, 50], [50, 50, 50, 50], id="static-partitions"),
    ],
)
def test_table1(tree: Any, policy: str, alloc_a: list[int], alloc_b: list[int]) -> None:
    # given: 100 units, A and B of equal weight, unit tasks of one slot (paper 002, Table 1)
    # when
    out = unit_task_schedule(100, tree, TABLE1, policy=policy, t_wait=2, horizon=4)
    # then: the "Current" allocation columns
    assert _column(out, "A") == alloc_a
    assert _column(out, "B") == alloc_b


def test_table1_totals() -> None:
    mlrf = unit_task_schedule(100, ["A", "B"], TABLE1, policy="mlrf", horizon=4)
    ltrf = unit_task_schedule(100, ["A", "B"], TABLE1, policy="ltrf", horizon=4)
    assert [sum(_column(mlrf, x)) for x in "AB"] == [160, 240]
    assert [sum(_column(ltrf, x)) for x in "AB"] == [200, 200]


def test_weights_shift_table1() -> None:
    # B contributed three times as much: LTRF evens usage / weight, i.e. B ends with ~3x A's usage
    out = unit_task_schedule(100, ["A", "B"], {0: {"A": 500, "B": 500}}, policy="ltrf", weights={"B": 3}, horizon=4)
    assert [sum(_column(out, x)) for x in "AB"] == [100, 300]


# --------------------------------------------------------------------------- starvation (Sec. 5.2.1)

STARVATION = {0: {"A": 200, "B": 10, "C": 50, "D": 60}, 27: {"A": 20, "B": 60, "C": 40, "D": 80}}


def test_starvation_first_phase_is_fig2() -> None:
    out = unit_task_schedule(12, FIG1B, STARVATION, policy="hltrf", t_wait=math.inf, horizon=27)
    assert [list(r.values()) for r in out[:3]] == [[3, 3, 3, 3]] * 3
    assert list(out[3].values()) == [5, 1, 3, 3]
    assert [sum(_column(out, x)) for x in "ABCD"] == [200, 10, 50, 60]  # all served by the 27th unit


def test_naive_hierarchy_starves_b_at_least_8_slots() -> None:
    out = unit_task_schedule(12, FIG1B, STARVATION, policy="hltrf", t_wait=math.inf, horizon=60)
    first_b = next(t for t in range(27, 60) if out[t]["B"] > 0) - 27
    assert first_b >= (210 - 110) // 12


@pytest.mark.parametrize("t_wait", [0, 1, 2, 3, 5])
def test_hltrf_b_waits_at_most_twait_plus_one_slot(t_wait: int) -> None:
    out = unit_task_schedule(12, FIG1B, STARVATION, policy="hltrf", t_wait=t_wait, horizon=80)
    served = [t for t in range(27, 80) if out[t]["B"] > 0]
    assert served[0] - 27 <= t_wait + 1
    granted = 0
    for a, b in itertools.pairwise(served):
        granted += out[a]["B"]
        if granted < 60:  # B still had pending tasks between the two grants
            assert b - a <= t_wait + 1


def test_twait_zero_is_ltrf_on_the_starvation_example() -> None:
    hl = unit_task_schedule(12, FIG1B, STARVATION, policy="hltrf", t_wait=0, horizon=60)
    flat = unit_task_schedule(12, ["A", "B", "C", "D"], STARVATION, policy="ltrf", horizon=60)
    assert hl == flat
    assert hl[27] == {"A": 0, "B": 12, "C": 0, "D": 0}


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": -1}, "capacity"),
        ({"horizon": -2}, "horizon"),
        ({"t_wait": -1.0}, "t_wait"),
        ({"t_wait": math.nan}, "t_wait"),
        ({"policy": "drf"}, "unknown policy"),
        ({"arrivals": {0: {"Z": 1}}}, "not a leaf"),
        ({"arrivals": {0: {"A": -1}}}, "new tasks"),
        ({"arrivals": {-1: {"A": 1}}}, "slots"),
        ({"weights": {"A": 0}}, "weight"),
        ({"weights": {"nobody": 1}}, "not in the tree"),
        ({"tree": {"G": []}}, "at least one child"),
        ({"tree": {"G": ["A", "A"]}}, "duplicate"),
    ],
)
def test_rejects_bad_input(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"capacity": 4, "tree": ["A", "B"], "arrivals": {0: {"A": 1}}, "policy": "ltrf", "horizon": 3}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        unit_task_schedule(args.pop("capacity"), args.pop("tree"), args.pop("arrivals"), **args)


def test_arrivals_after_horizon_are_ignored_and_zero_horizon_is_empty() -> None:
    assert unit_task_schedule(3, ["A"], {5: {"A": 9}}, policy="ltrf", horizon=2) == [{"A": 0}, {"A": 0}]
    assert unit_task_schedule(3, ["A"], {0: {"A": 9}}, policy="ltrf", horizon=0) == []


# --------------------------------------------------------------------------- oracle


class Node:
    """A node of the reference's own tree, built straight from the nested dicts."""

    def __init__(self, name: str, weight: Fraction, kids: list[Node]) -> None:
        self.name, self.weight, self.kids = name, weight, kids

    def leaves(self) -> list[str]:
        return [self.name] if not self.kids else [x for k in self.kids for x in k.leaves()]


def _build(children: Any, weights: Mapping[str, int]) -> list[Node]:
    out: list[Node] = []
    if isinstance(children, Mapping):
        items = list(children.items())
    else:
        items = [(c, None) if isinstance(c, str) else next(iter(c.items())) for c in children]
    for name, sub in items:
        kids = [] if sub is None else _build(sub, weights)
        out.append(Node(name, Fraction(weights.get(name, 1)), kids))
    return out


def reference(
    capacity: int, tree: Any, arrivals: dict[int, dict[str, int]], policy: str, t_wait: float, weights: dict[str, int], horizon: int
) -> list[dict[str, int]]:
    """The issue's wording, slot by slot, unit by unit, in exact arithmetic."""
    root = Node("<root>", Fraction(1), _build(tree, weights))
    leaves = root.leaves()
    frac: dict[str, Fraction] = {}

    def fractions(node: Node, f: Fraction) -> None:
        total = sum(k.weight for k in node.kids)
        for k in node.kids:
            frac[k.name] = f * k.weight / total
            fractions(k, frac[k.name])

    fractions(root, Fraction(1))
    queue: dict[str, list[int]] = {x: [] for x in leaves}  # arrival slot of each pending task
    used = dict.fromkeys(leaves, 0)
    last = dict.fromkeys(leaves, -math.inf)  # slot of the last grant
    since: dict[str, float | None] = dict.fromkeys(leaves, None)  # began demanding at
    quota = _static_quota(capacity, [frac[x] for x in leaves])
    out = []
    for t in range(horizon):
        for x in leaves:
            queue[x] += [t] * arrivals.get(t, {}).get(x, 0)
        got = dict.fromkeys(leaves, 0)
        for _ in range(capacity):
            for x in leaves:  # starvation clocks: a leaf without pending tasks does not wait
                if not queue[x]:
                    since[x] = None
                elif since[x] is None:
                    since[x] = t
            want = [x for x in leaves if queue[x]]
            if policy == "static":
                want = [x for x in want if got[x] < quota[leaves.index(x)]]
            if not want:
                break
            if policy in ("fifo", "static"):
                pick = min(want, key=lambda x: (queue[x][0], leaves.index(x)))
            elif policy == "mlrf":
                pick = min(want, key=lambda x: (got[x] / frac[x], leaves.index(x)))
            else:
                lowest = min(want, key=lambda x: (used[x] / frac[x], leaves.index(x)))
                since_x = since[lowest]
                assert since_x is not None
                if policy == "ltrf" or t - max(last[lowest], since_x) >= t_wait:
                    pick = lowest
                else:
                    node = root
                    while node.kids:
                        cands = [k for k in node.kids if set(k.leaves()) & set(want)]
                        node = min(cands, key=lambda k: sum(used[x] for x in k.leaves()) / k.weight)
                    pick = node.name
            queue[pick].pop(0)
            if not queue[pick]:
                since[pick] = None  # no pending task: it stops waiting (Alg. 2, lines 15-16)
            got[pick] += 1
            used[pick] += 1
            last[pick] = t
        out.append(got)
    return out


def _static_quota(capacity: int, fracs: list[Fraction]) -> list[int]:
    exact = [capacity * f for f in fracs]
    base = [math.floor(e) for e in exact]
    order = sorted(range(len(fracs)), key=lambda k: (-(exact[k] - base[k]), k))
    for k in order[: capacity - sum(base)]:
        base[k] += 1
    return base


@st.composite
def nested_trees(draw: st.DrawFn) -> tuple[Any, list[str], list[str]]:
    """Random nested trees of up to 3 levels; returns (tree, leaf names, group names)."""
    counter = iter(range(100))
    leaves: list[str] = []
    groups: list[str] = []

    def group(depth: int) -> Any:
        kids: list[Any] = []
        for _ in range(draw(st.integers(1, 3))):
            if depth < 2 and draw(st.booleans()):
                name = f"g{next(counter)}"
                groups.append(name)
                kids.append({name: group(depth + 1)})
            else:
                name = f"u{next(counter)}"
                leaves.append(name)
                kids.append(name)
        return kids

    top = group(0)
    if draw(st.booleans()) and all(isinstance(k, dict) for k in top):
        top = {next(iter(k)): next(iter(k.values())) for k in top}  # a dict at the top level
    return top, leaves, groups


@settings(max_examples=150, deadline=None)
@given(data=st.data(), policy=st.sampled_from(["fifo", "static", "mlrf", "ltrf", "hltrf"]))
def test_matches_reference_on_random_instances(data: st.DataObject, policy: str) -> None:
    tree, leaves, groups = data.draw(nested_trees())
    weights = {n: data.draw(st.integers(1, 4)) for n in leaves + groups if data.draw(st.booleans())}
    horizon = data.draw(st.integers(1, 10))
    arrivals = {
        t: {x: data.draw(st.integers(0, 5)) for x in leaves if data.draw(st.booleans())}
        for t in range(horizon)
        if data.draw(st.booleans())
    }
    capacity = data.draw(st.integers(0, 7))
    t_wait = data.draw(st.sampled_from([0, 1, 2, 3, math.inf]))
    got = unit_task_schedule(capacity, tree, arrivals, policy=policy, t_wait=t_wait, weights=weights, horizon=horizon)
    assert got == reference(capacity, tree, arrivals, policy, t_wait, weights, horizon)
    assert all(list(row) == leaves for row in got)  # every leaf, in tree order
    assert all(sum(row.values()) <= capacity for row in got)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    t_wait=st.sampled_from([0, 1, 2, 3, 4, math.inf]),
    capacity=st.integers(1, 6),
)
def test_hltrf_matches_reference_on_skewed_two_level_instances(data: st.DataObject, t_wait: float, capacity: int) -> None:
    # two groups, one leaf of the first group far ahead: the naive walk and the
    # starvation timeout then disagree often (paper 002, Sec. 5.2.1)
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=2, max_size=3))
    tree = {f"g{i}": [f"u{i}{k}" for k in range(n)] for i, n in enumerate(sizes)}
    leaves = [x for kids in tree.values() for x in kids]
    weights = {n: data.draw(st.integers(1, 3)) for n in [*tree, *leaves] if data.draw(st.booleans())}
    arrivals = {0: {leaves[0]: data.draw(st.integers(10, 40))}}
    for t in range(1, 12):
        if data.draw(st.booleans()):
            arrivals[t] = {x: data.draw(st.integers(0, 6)) for x in leaves}
    got = unit_task_schedule(capacity, tree, arrivals, policy="hltrf", t_wait=t_wait, weights=weights, horizon=20)
    assert got == reference(capacity, tree, arrivals, "hltrf", t_wait, weights, 20)
