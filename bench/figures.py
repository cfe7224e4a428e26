"""What every benchmark shares: it proves it measured the work it names, and reports its figures.

Conventions 11: a figure from a no-op is worse than no figure. So a benchmark calls
:func:`require` on what it measured (a clearing that cleared with rounds > 0, as many jobs
finished as were submitted, equal outputs across the variants it compares) and stops with
:class:`HollowMeasurement` (exit status 3) when the work was not done: it never prints a
figure of a clearing that cleared nothing.

Its headline figures go through :func:`record`: printed on its own output, and appended as
one JSON line to the file named by ``BENCH_FIGURES`` when that is set (``bench/suite.py``
sets it and prints the table of ``make bench``: figure, goal, measured, ratio, load).
``ratio`` is oriented so that >= 1 means the goal is met: measured / goal for a floor
("at least", e.g. simulated seconds per wall second), goal / measured for a ceiling ("at
most", e.g. milliseconds).

The goals are set for a machine that does 10^7 pure-Python additions in :data:`REFERENCE_S`
seconds; machines here differ by up to 3x. So each figure also carries the additions time of
the process that recorded it (measured once, at its first figure, unless the benchmark gives
its own) and ``scaled_ratio``: the ratio against the goal scaled to that machine's speed (a
ceiling times additions / REFERENCE_S, a floor times REFERENCE_S / additions).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

HOLLOW_EXIT = 3  # the exit status of a benchmark that measured a no-op
REFERENCE_S = 0.6  # seconds of 10^7 pure-Python additions on the machine the goals are set for


class HollowMeasurement(AssertionError):
    """The benchmark did not measure the work it names (the figure would be a no-op's)."""


def require(condition: bool, what: str) -> None:
    """Stop the benchmark unless ``condition`` holds; ``what`` says what the work should have been.

    Raises:
        HollowMeasurement: ``condition`` is false.
    """
    if not condition:
        raise HollowMeasurement(what)


@dataclass(frozen=True)
class Figure:
    """One measured figure. ``better``: "higher" (the goal is a floor) or "lower" (a ceiling)."""

    figure: str
    measured: float
    unit: str
    goal: float | None = None
    better: Literal["higher", "lower"] = "higher"
    note: str = ""
    load: float = 0.0  # the machine's 1-minute load average when the figure was recorded
    extra: dict[str, float] = field(default_factory=dict)  # named side figures (CPU ms, ...), for A/B runs
    additions_s: float | None = None  # 10^7 pure-Python additions on the recording machine, seconds

    @property
    def ratio(self) -> float | None:
        """>= 1 when the goal is met, whichever way the goal points; None without a goal."""
        if self.goal is None or self.measured <= 0:
            return None
        return self.measured / self.goal if self.better == "higher" else self.goal / self.measured

    @property
    def scaled_ratio(self) -> float | None:
        """:attr:`ratio` against the goal scaled to the recording machine's speed (>= 1: met there);
        None without a goal or an additions time. A faster machine (additions below REFERENCE_S)
        gets a tighter goal: a ceiling times additions / REFERENCE_S, a floor times REFERENCE_S / additions."""
        if self.ratio is None or not self.additions_s:
            return None
        return self.ratio * self.additions_s / REFERENCE_S


def record(figure: str, measured: float, *, unit: str, goal: float | None = None,
           better: Literal["higher", "lower"] = "higher", note: str = "", extra: dict[str, float] | None = None,
           additions_s: float | None = None) -> Figure:
    """Report a figure: one line on stdout, and a JSON line in ``$BENCH_FIGURES`` when set. ``additions_s``:
    the machine's :func:`python_additions_s` if the benchmark measured it; else it is measured here, once a process."""
    if additions_s is None and goal is not None:
        if not _ADDITIONS:
            _ADDITIONS.append(python_additions_s())
        additions_s = _ADDITIONS[0]
    fig = Figure(figure, float(measured), unit, goal, better, note, os.getloadavg()[0], dict(extra or {}), additions_s)
    goal_text = "" if goal is None else f" (goal {'>=' if better == 'higher' else '<='} {goal:g} {unit})"
    sys.stdout.write(f"figure: {figure}: {measured:.4g} {unit}{goal_text}{'; ' + note if note else ''}; load {fig.load:.2f}\n")
    sys.stdout.flush()
    path = os.environ.get("BENCH_FIGURES")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(fig)) + "\n")
    return fig


_ADDITIONS: list[float] = []  # this process's additions time, measured at its first figure with a goal


def python_additions_s() -> float:
    """Wall seconds of 10^7 pure-Python additions: the machine's speed at the moment (the goals are
    set for about 0.6 s; scale a goal by this time over 0.6 s to read a figure on a slower machine)."""
    t0 = time.perf_counter()
    total = 0
    for i in range(10**7):
        total += i
    if total != 10**7 * (10**7 - 1) // 2:
        raise HollowMeasurement("the additions loop did not add")
    return time.perf_counter() - t0


def load_figures(path: str) -> list[Figure]:
    """The figures appended to ``path`` (one JSON object a line)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as lines:
        return [Figure(**json.loads(line)) for line in lines if line.strip()]


def run_guarded(main: object, *args: object) -> int:
    """Call ``main(*args)``; a :class:`HollowMeasurement` becomes a one-line message and
    exit status :data:`HOLLOW_EXIT` (the traceback says nothing the message does not)."""
    try:
        result = main(*args)  # type: ignore[operator]
    except HollowMeasurement as hollow:
        sys.stdout.flush()
        sys.stderr.write(f"HOLLOW MEASUREMENT ({os.path.basename(sys.argv[0])}): {hollow}\n")
        return HOLLOW_EXIT
    return int(result or 0)


class Timer:
    """Wall and CPU seconds (this process) of a block: on a shared machine the CPU time is
    the figure that does not move with the other processes' load."""

    def __enter__(self) -> Timer:
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0
