"""Plain-Python and bincount fast paths give numpy's general paths' results, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.abacus.baselines import _within_group
from scheduler.fairshare import selection
from scheduler.fairshare.fairness import QueueTree
from scheduler.types import MarketSnapshot


def argmin_first_numpy(values: np.ndarray, mask: np.ndarray) -> int:
    """The general path of ``selection.argmin_first`` (no small-array shortcut)."""
    vals = np.where(mask, values, np.inf)
    best = float(vals.min(initial=np.inf))
    if best == np.inf:
        return -1 if not np.any(mask & np.isposinf(values)) else int(np.argmax(mask))
    return int(np.argmax(vals <= best + selection.TIE_RTOL * max(1.0, abs(best))))


@pytest.mark.parametrize("seed", range(20))
def test_argmin_first_agrees_with_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    specials = [0.0, -0.0, 1.0, 1.0 + 1e-13, np.inf, -np.inf, np.nan]
    for _ in range(200):
        n = int(rng.integers(1, 10))
        values = np.where(rng.random(n) < 0.3, rng.choice(specials, n), rng.integers(0, 4, n) / 3.0)
        mask = rng.random(n) < 0.6
        assert selection.argmin_first(values, mask) == argmin_first_numpy(values, mask)


def test_mean_agrees_with_numpy() -> None:
    rng = np.random.default_rng(1)
    for n in range(1, 12):
        for _ in range(500):
            values = (rng.uniform(0, 1e3, n) * rng.choice([1e-8, 1.0, 1e8], n)).tolist()
            assert selection.mean_of(values) == float(np.mean(values))


def test_aggregate_agrees_with_add_at() -> None:
    tree = QueueTree.from_paths({"root.a.x": 1, "root.a.y.p": 2, "root.a.y.q": 1, "root.b": 3, "root.c.z": 1})
    rng = np.random.default_rng(2)
    for _ in range(200):
        leaf_values = rng.uniform(0, 1e4, len(tree.leaves)) * (rng.random(len(tree.leaves)) < 0.7)
        want = np.zeros(len(tree.names))
        want[np.asarray(tree.leaves)] = leaf_values
        for level, parents in tree.levels:
            np.add.at(want, parents, want[level])
        np.testing.assert_array_equal(tree.aggregate(leaf_values), want)


@pytest.mark.parametrize("groups", [[0, 2, 2, 5, 0, 2], [7, -3, 7, 100, -3, 40]])
def test_within_group_agrees_with_add_at(groups: list[int]) -> None:
    rng = np.random.default_rng(3)
    n, m = len(groups), 2
    demand = rng.random((n, m)) < 0.7
    values = rng.uniform(0, 100, (n, m)) * demand
    snapshot = MarketSnapshot(
        job_ids=np.arange(n), group=np.array(groups), budgets=np.ones(n), weights=np.ones((n, m)),
        utility=("log",) * n, demand=demand, capacity=np.ones(m),
    )
    _, index = np.unique(np.array(groups), return_inverse=True)
    totals, counts = np.zeros((index.max() + 1, m)), np.zeros((index.max() + 1, m))
    np.add.at(totals, index, values)
    np.add.at(counts, index, demand.astype(float))
    total, count = totals[index], counts[index]
    want = np.where(total > 0, values / np.where(total > 0, total, 1.0), demand / np.maximum(count, 1.0))
    np.testing.assert_array_equal(_within_group(values, snapshot), want)


def descend_numpy(tree: QueueTree, usage: np.ndarray, mask: np.ndarray) -> int:
    """``FairShareAllocator._descend``'s numpy path (trees past ``selection.SMALL`` nodes take it)."""
    node_usage = tree.aggregate(usage) / tree.sibling_fraction
    has_demand = tree.aggregate(mask.astype(np.float64)) > 0
    node = tree.root
    while tree.children[node]:
        kids = np.asarray(tree.children[node], dtype=np.int64)
        node = int(kids[selection.argmin_first(node_usage[kids], has_demand[kids])])
    return int(tree.leaf_position[node])


def _random_tree(rng: np.random.Generator) -> QueueTree:
    """Up to four levels, uneven fan-out, weights with ties; leaves at several depths."""
    paths: dict[str, float] = {}
    for k in range(int(rng.integers(2, 14))):
        depth = int(rng.integers(1, 4))
        path = "root." + ".".join(f"n{int(rng.integers(0, 3))}" for _ in range(depth - 1)) + f".q{k}"
        paths[path.replace("..", ".")] = float(rng.choice([1.0, 1.0, 2.0, 3.5]))
    return QueueTree.from_paths(paths)


@pytest.mark.parametrize("seed", range(30))
def test_descend_small_picks_the_leaf_of_the_numpy_walk(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tree = _random_tree(rng)
    small = selection.SmallTree.of(tree)
    n = len(tree.leaves)
    for _ in range(200):
        usage = np.where(rng.random(n) < 0.3, rng.integers(0, 4, n) / 3.0, rng.uniform(0, 1e4, n) * rng.choice([1e-9, 1.0], n))
        if rng.random() < 0.05:
            usage[int(rng.integers(n))] = np.inf
        mask = rng.random(n) < 0.6
        assert selection.descend_small(small, usage.tolist(), mask.tolist()) == descend_numpy(tree, usage, mask)
        totals, demand = selection.group_totals(small, usage.tolist(), mask.tolist())
        assert totals == tree.aggregate(usage).tolist()  # bit for bit
        assert demand == (tree.aggregate(mask.astype(np.float64)) > 0).tolist()


@pytest.mark.parametrize("seed", range(20))
def test_argmin_ratio_small_agrees_with_numpy(seed: int) -> None:
    """The quotients' argmin, or None exactly where numpy's edge cases (no demand, a value that
    is not finite) must decide; where it answers, numpy's general path answers the same."""
    rng = np.random.default_rng(seed)
    specials = [0.0, -0.0, 1.0, 1.0 + 1e-13, np.inf, np.nan, 1e308, 3e-308]
    for _ in range(200):
        n = int(rng.integers(1, 10))
        usage = np.where(rng.random(n) < 0.3, rng.choice(specials, n), rng.integers(0, 4, n) / 3.0)
        frac = rng.choice([0.125, 0.25, 1.0 / 3.0, 0.5, 1e-300], n)
        mask = rng.random(n) < 0.6
        with np.errstate(over="ignore", invalid="ignore"):
            ratios = usage / frac
        got = selection.argmin_ratio_small(usage.tolist(), frac.tolist(), mask.tolist())
        finite = bool(np.isfinite(ratios[mask]).all()) and bool(mask.any())
        assert (got is None) == (not finite) or (got is None and finite and not np.isfinite(ratios[mask].sum()))
        if got is not None:
            assert got == argmin_first_numpy(ratios, mask)
