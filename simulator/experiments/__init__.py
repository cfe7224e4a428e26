"""Experiments: the papers' experiments (and what-ifs) as pure, registered functions.

An experiment is a pure function ``run(params, progress) -> result`` (no Django,
no Celery) registered under a name. The web side (``marketplace`` app,
``ExperimentRun``) runs registered experiments as background jobs, stores the
progress and the result, and renders the result's figures and tables; the
command line runs the same function. Adding an experiment is adding one module
to this package; nothing else needs editing:

```python
# simulator/experiments/my_paper_fig9.py
from simulator.experiments import Experiment, Progress, Result, figure, register, table

def run(params: Params, progress: Progress) -> Result:
    progress(0.0, "warming up")            # fraction in [0, 1], a short message
    ...                                    # call progress(...) now and then
    return {
        "figures": [figure("Title", [{"type": "scatter", "x": [...], "y": [...], "name": "..."}],
                           x_title="budget ($)", y_title="job efficiency")],
        "tables": [table("Beside the paper", ["metric", "ours", "paper"], [["...", 0.51, 0.51]])],
        "summary": "One or two sentences a reader sees first.",
    }

EXPERIMENT = register(Experiment(
    name="abacus_fig9a", title="Abacus Fig. 9a: efficiency against budget",
    source="paper 000, Sec. 7, Fig. 9a", run=run, defaults={"seed": 0, "budgets": [50, 100, 200]},
    description="What it shows, in a paragraph.",
))
```

Contract:
- ``params`` is ``defaults`` overlaid with the caller's values (same keys only:
  an unknown key is a ``ValueError``; a value of another JSON type than the
  default's is a ``TypeError``). Values are JSON scalars or lists of them.
- ``progress(fraction, message)`` may raise :class:`Cancelled` (the run was
  cancelled); let it propagate.
- The result is JSON-serialisable: ``figures`` (plotly figure dicts: ``data``
  and ``layout``; at most ``MAX_POINTS_PER_TRACE`` points per trace), ``tables``
  (title, columns, rows, optional note) and ``summary`` (text). Units belong in
  axis titles and column names; simulated time is labelled as such.
- Deterministic for given params (seed them), so a stored result can be
  reproduced by ``python -m simulator.experiments <name> [key=value ...]``.

Experiments are discovered by importing every module of this package
(:func:`load_all`), so the registry needs no hand-kept list.
"""

from __future__ import annotations

import importlib
import json
import math
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Params = Mapping[str, Any]
Result = dict[str, Any]
Progress = Callable[[float, str], None]

MAX_POINTS_PER_TRACE = 2000  # a stored result stays well under a few MB in the browser


class Cancelled(Exception):
    """Raised by a progress callback when the run was cancelled."""


class UnknownExperiment(KeyError):
    """A name no registered experiment has."""


@dataclass(frozen=True)
class Estimate:
    """A run's wall time before it starts, and the model it comes from.

    Attributes:
        seconds: estimated wall seconds on a machine doing 10^7 pure-Python additions in
            ``reference_additions_s`` (scale by this machine's time for that loop).
        basis: the model in words, with where its constants were measured.
        reference_additions_s: the measuring machine's time for 10^7 additions (s).
    """

    seconds: float
    basis: str
    reference_additions_s: float


@dataclass(frozen=True)
class Experiment:
    """A registered experiment.

    Attributes:
        name: registry key (lower-case, ``[a-z0-9_]``).
        title: shown as the page heading.
        source: paper, section and figure/table it reproduces (or "what-if").
        run: the pure function ``run(params, progress) -> Result``.
        defaults: every parameter with its default value (JSON scalars or lists).
        description: a paragraph shown above the parameters.
        help: parameter name -> one-line help with its unit.
        shards: optional split into independent parts for a sweep: the
            parameters of each part (valid parameters of this experiment);
            ``run`` on each, then ``combine``, gives ``run``'s own result, so
            a runner with several workers (the lab's Celery workers) may run
            the parts at once (:func:`run_in_parts` runs them in turn).
        combine: ``combine(params, part_results)`` -> the result, parts in
            ``shards`` order.
        estimate: optional ``estimate(params)`` -> :class:`Estimate`, the wall time a run takes
            before it starts (the lab shows it on the form); None when the experiment has no model.
        choices: parameter name -> the values it may take (a list parameter: the values its
            items may take, several at once); the lab's form offers them as a choice.
        bounds: parameter name -> (least, most) of a number, or of every number of a list
            (None: no bound on that side); the lab's number boxes carry them as min and max.
    """

    name: str
    title: str
    source: str
    run: Callable[[Params, Progress], Result]
    defaults: Mapping[str, Any]
    description: str = ""
    help: Mapping[str, str] = field(default_factory=dict)
    shards: Callable[[Params], list[dict[str, Any]]] | None = None
    combine: Callable[[Params, Sequence[Result]], Result] | None = None
    estimate: Callable[[Params], Estimate] | None = None
    choices: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    bounds: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c == "_" for c in self.name) or self.name.lower() != self.name:
            raise ValueError(f"experiment name {self.name!r}: use lower-case letters, digits and _")
        json.dumps(dict(self.defaults))  # defaults must be JSON
        stray = (set(self.choices) | set(self.bounds)) - set(self.defaults)
        if stray:
            raise ValueError(f"experiment {self.name!r}: choices or bounds for unknown parameters {sorted(stray)}")
        for key in [*self.choices, *self.bounds]:
            _declared(key, self.defaults[key], self.choices.get(key), self.bounds.get(key))  # the defaults obey them

    def params(self, given: Params | None = None) -> dict[str, Any]:
        """``defaults`` overlaid with ``given``.

        Raises:
            ValueError: a key that is not a parameter of this experiment, or a
                non-finite number.
            TypeError: a value whose JSON type differs from the default's.
        """
        out = dict(self.defaults)
        for key, value in (given or {}).items():
            if key not in self.defaults:
                raise ValueError(f"{key}: not a parameter of {self.name} (known: {', '.join(sorted(self.defaults))})")
            out[key] = _coerce(key, value, self.defaults[key])
            _declared(key, out[key], self.choices.get(key), self.bounds.get(key))
        return out


def _declared(key: str, value: Any, choices: Sequence[Any] | None, bounds: tuple[float | None, float | None] | None) -> None:
    """Check ``value`` (or each item of a list) against the parameter's declared ``choices`` and ``bounds``.
    Raises ValueError "<key>: ..." naming the values allowed or the bound crossed."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if choices is not None:
        bad = [v for v in items if v not in choices]
        if bad:
            verb = "is" if len(bad) == 1 else "are"
            raise ValueError(f"{key}: {', '.join(map(str, bad))} {verb} not among the choices ({'; '.join(map(str, choices))})")
    low, high = bounds or (None, None)
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if low is not None and v < low:
            raise ValueError(f"{key}: at least {low:g} (got {v:g})")
        if high is not None and v > high:
            raise ValueError(f"{key}: at most {high:g} (got {v:g})")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if value is None:
        return "null"
    raise TypeError(f"unsupported parameter type {type(value).__name__}")


def _coerce(key: str, value: Any, default: Any) -> Any:
    want, got = _kind(default), _kind(value)
    if want != "null" and got != want:
        raise TypeError(f"{key}: expected a {want}, got a {got}")
    if got == "number":
        if not math.isfinite(float(value)):
            raise ValueError(f"{key}: must be a finite number")
        return int(value) if isinstance(default, int) and float(value).is_integer() else value
    if got == "list":
        items = list(value)
        for item in items:
            if _kind(item) == "number" and not math.isfinite(float(item)):
                raise ValueError(f"{key}: every number must be finite")
        return items
    return value


EXPERIMENTS: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Add ``experiment`` to :data:`EXPERIMENTS` (a second one under the same name is a ``ValueError``)."""
    known = EXPERIMENTS.get(experiment.name)
    if known is not None and known.run is not experiment.run:
        raise ValueError(f"experiment {experiment.name!r} is registered twice")
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def load_all() -> dict[str, Experiment]:
    """Import every module of this package and its subpackages (each registers its experiments); return the registry."""
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if not info.name.rpartition(".")[2].startswith("_"):
            importlib.import_module(info.name)
    return EXPERIMENTS


def get(name: str) -> Experiment:
    """The experiment registered as ``name``.

    Raises:
        UnknownExperiment: no such experiment.
    """
    load_all()
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise UnknownExperiment(f"unknown experiment {name!r} (known: {', '.join(sorted(EXPERIMENTS))})") from None


def _quiet(fraction: float, message: str) -> None:
    return None


def run(name: str, params: Params | None = None, progress: Progress | None = None) -> Result:
    """Run experiment ``name`` with ``params`` (validated) and check its result.

    Returns:
        The result, with ``params`` (the values used) added.

    Raises:
        UnknownExperiment, ValueError, TypeError: bad name or parameters.
        Cancelled: the progress callback cancelled the run.
        ValueError: the experiment returned a malformed result.
    """
    experiment = get(name)
    values = experiment.params(params)
    result = experiment.run(values, progress or _quiet)
    check_result(result)
    return {**result, "params": values}


def run_in_parts(name: str, params: Params | None = None, progress: Progress | None = None) -> Result:
    """Run experiment ``name`` part by part (its ``shards``, then ``combine``): what a sweep
    over workers computes, in one process. Raises ValueError if it has no shards."""
    experiment = get(name)
    values = experiment.params(params)
    if experiment.shards is None or experiment.combine is None:
        raise ValueError(f"experiment {name!r} does not split into parts")
    parts = experiment.shards(values)
    results = []
    for k, part in enumerate(parts):
        (progress or _quiet)(k / max(len(parts), 1), f"part {k + 1} of {len(parts)}")
        results.append(experiment.run(experiment.params(part), _quiet))
    result = experiment.combine(values, results)
    check_result(result)
    return {**result, "params": values}


def split(experiment: Experiment, values: Params) -> list[dict[str, Any]] | None:
    """The validated parameters of each part of a run of ``experiment`` with ``values`` (already
    validated by ``experiment.params``), in ``shards`` order; None when the run is not split:
    the experiment declares no ``shards``/``combine``, or ``values`` already name one part.

    ``values`` name one part when a key that names the part (one that every part of a run
    at the defaults sets away from its default, e.g. ``cell`` of ``published_schedulers``)
    is already away from its default in ``values``: such a run is one part, and splitting
    it again would run the whole.

    Raises:
        ValueError, TypeError: ``shards`` refused ``values`` or gave invalid parameters.
    """
    if experiment.shards is None or experiment.combine is None:
        return None
    defaults = experiment.params()
    at_defaults = experiment.shards(defaults)
    own = [k for k, default in defaults.items() if at_defaults and all(p.get(k, default) != default for p in at_defaults)]
    if any(values[k] != defaults[k] for k in own):
        return None
    parts = [experiment.params(p) for p in experiment.shards(values)]
    if not parts:
        raise ValueError(f"experiment {experiment.name!r} split into no parts")
    return parts


def check_result(result: Result) -> None:
    """Raise ``ValueError`` unless ``result`` follows the contract above (JSON, shapes, sizes)."""
    for figure_ in result.get("figures", []):
        if not isinstance(figure_, dict) or "data" not in figure_ or "layout" not in figure_:
            raise ValueError("a figure needs 'data' and 'layout'")
        for trace in figure_["data"]:
            for axis in ("x", "y"):
                if len(trace.get(axis, ())) > MAX_POINTS_PER_TRACE:
                    raise ValueError(f"a trace has more than {MAX_POINTS_PER_TRACE} points: downsample it")
    for table_ in result.get("tables", []):
        width = len(table_["columns"])
        if any(len(row) != width for row in table_["rows"]):
            raise ValueError(f"table {table_.get('title')!r}: every row needs {width} cells")
    json.dumps(result, allow_nan=False)


def figure(title: str, data: Sequence[Mapping[str, Any]], *, x_title: str, y_title: str, **layout: Any) -> dict[str, Any]:
    """A plotly figure dict with titled axes (put the unit in the axis title). The axes take the
    room their titles and tick labels need (``automargin``), so a long title is never clipped."""
    axes = {name: {"title": {"text": text}, "automargin": True, **layout.pop(name, {})}
            for name, text in (("xaxis", x_title), ("yaxis", y_title))}
    return {
        "data": [dict(trace) for trace in data],
        "layout": {
            "title": {"text": title},
            **axes,
            "margin": {"t": 50, "r": 20, "b": 50, "l": 60},
            **layout,
        },
    }


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], note: str = "") -> dict[str, Any]:
    """A table for the result page (cells: JSON scalars)."""
    return {"title": title, "columns": list(columns), "rows": [list(r) for r in rows], "note": note}


def finite(value: float | None, digits: int = 6) -> float | None:
    """``value`` rounded, or None for NaN/inf/None (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)
