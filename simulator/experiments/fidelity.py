"""Fidelity helpers shared by the paper experiments (docs/fidelity.md): intervals, verdicts, headline rows
and the set-up statements each experiment's page carries.

Statistics. Where a figure is stochastic an experiment runs several seeds and
reports the mean with its 95 % Student-t confidence interval (:func:`mean_ci`);
a claim that compares two settings ("A beats B") is tested as the paired
difference of A and B on the same seeds (:func:`paired`), so a seed's
workload noise cancels.

Verdicts. Fixed here, before any result was seen, and the same for every paper:

* **reproduced** -- the paper's number lies inside our 95 % interval widened
  by ``TOLERANCE`` (10 %) of the paper's value, or, for a claim without a
  number, the paired difference's interval lies wholly on the claimed side;
* **shape only** -- the claim's direction holds (the paired interval on the
  claimed side, or a stated qualitative shape holds) but the number is outside
  that band, by at most ``MAGNITUDE`` (3x);
* **differs (magnitude)** -- the direction holds but our mean is off the
  paper's number (or range) by more than 3x either way, or has the other sign
  (:func:`off_by`; added 2026-11-28, before the report under it was run: a 20x
  miss is not "shape only");
* **differs** -- the claimed direction does not hold at 95 %;
* **not testable** -- the model rules the claim's number out for every policy
  (e.g. a gain above the work bound); the row's cause says what the model lacks
  (added 2026-11-28, before the report under it was run).

A headline row (:func:`headline`) carries the paper's quote with its section,
the paper's value, ours with its interval, the verdict and its cause; every
paper experiment returns its rows under the result key ``headlines`` (the lab
ignores unknown keys) and as a table, and ``python -m simulator.experiments
report`` gathers them into ``docs/fidelity.md``.

Set-up statements. :func:`setup_row` states, for one item of the set-up,
what the paper says and what we run: "from the paper", or "paper silent;
chosen: ...; because ...; sensitivity: ..." (the choice made before the
result), or "kept because it matches the figure" with the default set-up's
figure beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from simulator.experiments import finite, table

TOLERANCE = 0.10  # a paper's number within our interval widened by 10 % of it counts as reproduced
MAGNITUDE = 3.0  # "shape only" becomes "differs (magnitude)" beyond this factor
VERDICTS = ("reproduced", "shape only", "differs (magnitude)", "differs", "not testable")


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds with its 95 % Student-t interval [low, high]; n values (low = high = mean for n = 1)."""

    mean: float
    low: float
    high: float
    n: int

    def text(self, digits: int = 2, unit: str = "") -> str:
        """``"m [lo, hi]"`` (or ``"m"`` for one value), the unit after each number."""
        if self.n < 2 or not math.isfinite(self.low):
            return f"{self.mean:.{digits}f}{unit} (n = {self.n})"
        return f"{self.mean:.{digits}f}{unit} [{self.low:.{digits}f}, {self.high:.{digits}f}] (n = {self.n})"

    def row(self, digits: int = 4) -> list[float | None]:
        """``[mean, low, high]`` rounded for a table (None where not finite)."""
        return [finite(self.mean, digits), finite(self.low, digits), finite(self.high, digits)]

    def scaled(self, factor: float) -> Estimate:
        """The same estimate times ``factor`` (e.g. 100 for per cent)."""
        lo, hi = sorted((self.low * factor, self.high * factor))
        return Estimate(self.mean * factor, lo, hi, self.n)


def mean_ci(values: Sequence[float] | np.ndarray, level: float = 0.95) -> Estimate:
    """Mean of ``values`` and its Student-t confidence interval at ``level``.

    Raises:
        ValueError: no values, or a non-finite one.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("mean_ci needs at least one finite value and no NaN")
    m = float(x.mean())
    if x.size < 2:
        return Estimate(m, m, m, 1)
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return Estimate(m, m - half, m + half, int(x.size))


def paired(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> Estimate:
    """``a - b`` seed by seed, with its 95 % interval (the same seeds in the same order).

    Raises:
        ValueError: different lengths, or as :func:`mean_ci`.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError("a paired difference needs the same seeds on both sides")
    return mean_ci(x - y)


def holds(diff: Estimate, side: str) -> bool:
    """The claim "difference > 0" (``side`` "+") or "< 0" ("-") at 95 %: the whole interval on that side."""
    if side not in {"+", "-"}:
        raise ValueError("side is '+' or '-'")
    return diff.low > 0 if side == "+" else diff.high < 0


def off_by(low: float, high: float, ours: float) -> float:
    """The factor by which ``ours`` lies outside the paper's ``[low, high]`` (a number: low = high):
    1 inside, ``ours / high`` above, ``low / ours`` below (magnitudes); inf for the other sign or 0."""
    lo, hi = sorted((low, high))
    if lo <= ours <= hi:
        return 1.0
    if not math.isfinite(ours):
        return math.inf
    sign = 1.0 if hi > 0 else -1.0 if lo < 0 else 0.0
    if sign == 0.0 or ours * sign <= 0:
        return math.inf
    a, b = sorted((abs(lo), abs(hi)))
    x = abs(ours)
    return x / b if x > b else a / x


def scaled_verdict(decided: str, low: float, high: float, ours: float, *, factor: float = MAGNITUDE) -> str:
    """``decided`` with the magnitude rule (module docstring): "shape only" more than ``factor`` off
    the paper's ``[low, high]`` becomes "differs (magnitude)"; any other verdict is returned unchanged."""
    return "differs (magnitude)" if decided == "shape only" and off_by(low, high, ours) > factor else decided


def verdict(paper_value: float | None, ours: Estimate | None, shape_holds: bool, *, tolerance: float = TOLERANCE) -> str:
    """The module docstring's rule: reproduced, shape only, differs (magnitude) or differs.

    Args:
        paper_value: the paper's number (None for a claim without one).
        ours: our estimate of the same quantity (None with ``paper_value`` None).
        shape_holds: the claim's direction or shape holds at 95 %.
    """
    if paper_value is not None and ours is not None:
        band = tolerance * abs(paper_value)
        if ours.low - band <= paper_value <= ours.high + band:
            return "reproduced"
        return scaled_verdict("shape only", paper_value, paper_value, ours.mean) if shape_holds else "differs"
    return "reproduced" if shape_holds else "differs"


def headline(*, paper: str, section: str, quote: str, paper_value: str, ours: str, verdict: str, cause: str) -> dict[str, str]:
    """One row of the fidelity report (module docstring).

    Raises:
        ValueError: a verdict outside :data:`VERDICTS`.
    """
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r} is not one of {VERDICTS}")
    return {"paper": paper, "section": section, "quote": quote, "paper_value": paper_value, "ours": ours,
            "verdict": verdict, "cause": cause}


HEADLINE_COLUMNS = ("quote (section)", "paper", "ours (mean [95 % CI], n)", "verdict", "cause")


def headline_table(rows: Sequence[Mapping[str, str]], note: str = "") -> dict[str, Any]:
    """The headline rows as a result table (the page shows what the report shows)."""
    cells = [[f"\"{r['quote']}\" ({r['section']})", r["paper_value"], r["ours"], r["verdict"], r["cause"]] for r in rows]
    return table("Headlines beside the paper (the fidelity report, docs/fidelity.md)", HEADLINE_COLUMNS, cells,
                 note=note or "Verdicts by the rule in simulator/experiments/fidelity.py, fixed before the runs.")


def from_paper(text: str) -> str:
    """A set-up item the paper states."""
    return f"from the paper: {text}"


def silent(chosen: str, because: str, sensitivity: str) -> str:
    """A set-up item the paper leaves open, chosen before the result was seen."""
    return f"paper silent; chosen: {chosen}; because {because}; sensitivity: {sensitivity}"


def matched(kept: str, default_figure: str) -> str:
    """A set-up kept because it matches the paper's figure, with the default set-up's figure beside it."""
    return f"kept because it matches the figure: {kept}; the default set-up gives: {default_figure}"


def setup_table(rows: Sequence[tuple[str, str]], note: str = "") -> dict[str, Any]:
    """(item, statement) rows as the page's set-up table."""
    return table("Set-up: the paper's text and our choices", ["item", "statement"], [list(r) for r in rows], note=note)
