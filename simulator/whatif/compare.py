"""Comparing simulation-lab runs: one summary table with confidence intervals over seeds.

Runs that differ only in ``seed`` are replicas of one configuration; each
metric is reported as the mean over the replicas with a two-sided 95 %
Student-t confidence interval ``mean +- t_{0.975, n-1} * s / sqrt(n)`` (no
interval for a single replica). Pure (numpy/scipy).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

# (key in the run's metrics, column title, index into a per-type list or None)
SUMMARY_METRICS: tuple[tuple[str, str, int | None], ...] = (
    ("finished", "jobs finished", None),
    ("mean_response_s", "mean response (sim s)", None),
    ("p95_response_s", "p95 response (sim s)", None),
    ("mean_slowdown", "mean slowdown", None),
    ("rho_max", "max finish-time fairness rho", None),
    ("rho_above_1", "jobs with rho > 1 (fraction)", None),
    ("mean_utilisation", "utilisation {0}", 0),
    ("mean_utilisation", "utilisation {1}", 1),
    ("revenue", "revenue (money)", None),
    ("welfare", "welfare (money)", None),
    ("welfare_share", "welfare / requested value", None),
    ("deadline_met_fraction", "deadlines met (fraction)", None),
    ("realised_utility", "realised utility (sum)", None),
    ("mean_price", "mean price {0} (money/slot)", 0),
    ("sharing_benefit", "sharing benefit Ψ at the end", None),
    ("sharing_loss", "sharing loss Ω at the end", None),
    ("worst_sharing_loss", "worst sharing loss Ω", None),
    ("min_rho", "min fairness degree rho", None),
)


@dataclass(frozen=True)
class Estimate:
    """Mean of ``n`` replicas and the half-width of its 95 % interval (NaN when n < 2)."""

    mean: float
    half_width: float
    n: int

    def text(self, digits: int = 4) -> str:
        """For people: ``"29,620 ± 1,600"``, ``"0.8564 ± 0.012"`` (never ``2.962e+04``); "—" without a value."""
        if self.n == 0 or not math.isfinite(self.mean):
            return "—"
        if self.n < 2 or not math.isfinite(self.half_width):
            return human(self.mean, digits)
        return f"{human(self.mean, digits)} ± {human(self.half_width, 2)}"


def human(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits in plain notation with thousands separators and no
    trailing zeros: ``human(29620.4) == "29,620"``, ``human(1612.3, 2) == "1,600"``,
    ``human(0.000123) == "0.000123"``, ``human(2.0) == "2"``."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    magnitude = math.floor(math.log10(abs(x)))
    rounded = round(x, digits - 1 - magnitude)
    decimals = max(0, digits - 1 - magnitude)
    text = f"{rounded:,.{min(decimals, 9)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def estimate(values: Sequence[float | None]) -> Estimate:
    """Mean and 95 % Student-t half-width of the finite ``values`` (others dropped)."""
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    n = len(x)
    if n == 0:
        return Estimate(math.nan, math.nan, 0)
    if n == 1:
        return Estimate(float(x[0]), math.nan, 1)
    half = float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return Estimate(float(x.mean()), half, n)


def _metric(metrics: Mapping[str, Any], key: str, index: int | None) -> float | None:
    value = metrics.get(key)
    if index is not None:
        if not isinstance(value, list) or index >= len(value):
            return None
        value = value[index]
    return None if value is None else float(value)


def summary_table(runs: Sequence[tuple[str, int, Mapping[str, Any]]], type_names: Sequence[str] = ()) -> dict[str, Any]:
    """One row per configuration label over its seeds.

    Args:
        runs: ``(label, seed, metrics)`` of each finished run (label: the
            configuration without its seed).
        type_names: the resource types' names in column order (``run.resource_names``),
            for the per-type columns ("utilisation map"); "type 0", ... when not given.

    Returns:
        ``{"columns", "rows", "estimates"}``: ``rows`` hold text cells
        ("mean ± half-width"), ``estimates`` the numbers (label -> column ->
        ``[mean, half_width, n]``) for export. Columns that no run has are
        left out (e.g. type 1 on a one-type SWF trace).
    """
    labels: list[str] = []
    by_label: dict[str, list[Mapping[str, Any]]] = {}
    for label, _seed, metrics in runs:
        if label not in by_label:
            labels.append(label)
            by_label[label] = []
        by_label[label].append(metrics)
    names = [*type_names, *(f"type {j}" for j in range(len(type_names), 2))]
    used = [(k, title.format(*names), i) for k, title, i in SUMMARY_METRICS if any(_metric(m, k, i) is not None for _, _, m in runs)]
    rows: list[list[Any]] = []
    estimates: dict[str, dict[str, list[float | int | None]]] = {}
    for label in labels:
        group = by_label[label]
        row: list[Any] = [label, len(group)]
        estimates[label] = {}
        for key, title, index in used:
            e = estimate([_metric(m, key, index) for m in group])
            row.append(e.text())
            estimates[label][title] = [_finite(e.mean), _finite(e.half_width), e.n]
        rows.append(row)
    return {"columns": ["configuration", "seeds", *[title for _, title, _ in used]], "rows": rows, "estimates": estimates}


def _finite(x: float) -> float | None:
    return round(x, 9) if math.isfinite(x) else None
