"""The fidelity report (docs/fidelity.md): every paper experiment run once, one row per headline.

``python -m simulator.experiments report`` runs each experiment of :data:`PAPER_EXPERIMENTS`
at its defaults (the full size; ``--quick`` overlays the CI size of :data:`QUICK`) and writes
``docs/fidelity.md``: per paper, each headline with the paper's quote and section, the
paper's value, ours with its 95 % interval, the verdict (reproduced / shape only / differs (magnitude) / differs,
by the rule in ``simulator.experiments.fidelity``) and the cause. The same tables are the
result of the registered experiment ``fidelity_report``, so the lab's pages show the report
like any other experiment.

An experiment contributes rows by returning them under its result's ``headlines`` key
(``fidelity.headline``); for the experiments that predate those rows, ``derived.DERIVED``
reads them from the experiment's own "Beside the paper" table (point values, flagged as
having no interval); one with neither is listed as such, never silently dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator import experiments
from simulator.experiments import Cancelled, Experiment, Params, Progress, Result, register, table
from simulator.experiments.derived import DERIVED
from simulator.experiments.fidelity import VERDICTS

PAPERS = {
    "000": "Abacus (Ding et al. 2015)",
    "001": "ERA (Babaioff et al. 2017)",
    "002": "LTRF / H-LTRF (Tang, Lee, He 2016)",
    "003": "Deadline payment minimisation (Di, Wang)",
    "004": "Cura (Palanisamy et al.)",
}

# (paper, experiment): every experiment that reproduces a paper's figure or table, in report order
PAPER_EXPERIMENTS: tuple[tuple[str, str], ...] = (
    ("000", "abacus_fig6_8"), ("000", "abacus_fig9a"), ("000", "abacus_fig9b"), ("000", "abacus_fig9c"),
    ("000", "abacus_fig10"), ("000", "abacus_fig10bc"), ("000", "abacus_fig11"), ("000", "abacus_slo_pool"),
    ("001", "era_headline"), ("001", "era_fig3"), ("001", "era_rayon"),
    ("002", "ltrf_fig8"), ("002", "ltrf_fig10"), ("002", "ltrf_traces_kth"), ("002", "ltrf_kth_isolation"), ("002", "ltrf_traces_lcg"),
    ("003", "paper003_der"),
    ("004", "cura_fig5"), ("004", "cura_fig6_7"), ("004", "cura_reconfig"), ("004", "cura_table7"),
)

# CI sizes: each experiment's defaults overlaid with these (a few seconds each)
QUICK: dict[str, dict[str, Any]] = {
    "era_headline": {"seeds": [0, 1, 2, 3, 4], "hours": 3.0, "sensitivity_capacities": [10], "sensitivity_floors": [],
                     "sensitivity_slacks": [], "dn_days": 4, "greedy_prices": [0.25, 0.5, 1.0, 1.5]},
    "era_fig3": {"seeds": [0, 1, 2, 3, 4], "hours": 2.0, "capacity_uses": [0.8, 1.0]},
    "era_rayon": {"seeds": [0, 1, 2, 3, 4], "jobs": 300},
    "paper003_der": {"seeds": [0, 1, 2, 3, 4], "max_tasks": 12},
    "abacus_fig6_8": {"runs": 10, "user_counts": [2, 32, 128], "type_counts": [1, 4, 16], "alphas": [0.5, 0.9]},
    "abacus_fig10bc": {"seeds": [0, 1, 2, 3, 4], "budgets": [100, 400], "ratios": [1, 6]},
    "abacus_fig11": {"seeds": [0, 1, 2, 3, 4], "ratios": [1, 6, 16], "ks": [3, 20], "draws": 10, "k_scatter": 3},
    "abacus_fig9a": {"seeds": [0, 1], "budgets": [50, 200, 800]},
    "abacus_fig9b": {"seeds": [0, 1], "ratios": [0.25, 4, 16]},
    "abacus_fig9c": {"seeds": [0, 1], "alphas": [0, 1]},
    "abacus_fig10": {"seeds": [0], "users": [1, 3, 6]},
    "abacus_slo_pool": {"seeds": [0], "loads": [0.5, 1.0]},
    "cura_fig5": {"jobs": 300, "span_s": 150.0, "max_deadlines_s": [200.0]},
    "cura_fig6_7": {"jobs": 150, "span_s": 80.0, "servers": [60, 250], "seeds": [0, 1, 2, 3, 4], "size_seeds": [0]},
    "cura_reconfig": {"jobs": 150, "span_s": 80.0, "seeds": [0], "betas": [0.25, 1.0], "boots_s": [0.0, 60.0]},
    "ltrf_fig8": {"seeds": [0, 1, 2, 3, 4]},
    "ltrf_fig10": {"seeds": [0, 1, 2, 3, 4], "t_waits": [0.0, 10.0], "sample_s": 30.0},
    "ltrf_kth_isolation": {"slice_starts_h": [0.0, 672.0, 1344.0, 2016.0, 2688.0], "hours": 36.0},
    "ltrf_traces_kth": {"hours": 72.0},
    "ltrf_traces_lcg": {"hours": 2.0},
}

# the full size: each experiment's defaults, with ten seeds where an older experiment's defaults run fewer
TEN = list(range(10))
FULL: dict[str, dict[str, Any]] = {
    "abacus_fig9a": {"seeds": TEN}, "abacus_fig9b": {"seeds": TEN}, "abacus_fig9c": {"seeds": TEN}, "abacus_fig10": {"seeds": TEN},
    "abacus_slo_pool": {"seeds": TEN},
}

COLUMNS = ("paper", "quote (section)", "paper's value", "ours (mean [95 % CI], n)", "verdict", "cause")


@dataclass(frozen=True)
class Section:
    """One experiment's part of the report: its name, paper, title, headline rows, summary, or the error it raised."""

    name: str
    paper: str
    title: str
    headlines: Sequence[Mapping[str, str]]
    summary: str
    error: str = ""


def run_all(*, quick: bool, progress: Progress, names: Sequence[str] | None = None) -> list[Section]:
    """Run every paper experiment (or ``names``) once; an experiment that is missing or fails
    becomes a section with its error, so one failure never hides the others."""
    registry = experiments.load_all()
    chosen = [(p, n) for p, n in PAPER_EXPERIMENTS if names is None or n in names]
    out = []
    for k, (paper, name) in enumerate(chosen):
        progress(k / max(len(chosen), 1), f"running {name}")
        if name not in registry:
            out.append(Section(name, paper, name, [], "", "not registered"))
            continue
        exp = registry[name]
        params = QUICK.get(name, {}) if quick else FULL.get(name, {})

        def nested(fraction: float, message: str, k: int = k, name: str = name) -> None:
            progress((k + fraction) / len(chosen), f"{name}: {message}")

        try:
            result = experiments.run(name, params, nested)
        except Cancelled:
            raise
        except Exception as error:  # the report shows a failing experiment; it does not stop there
            out.append(Section(name, paper, exp.title, [], "", f"{type(error).__name__}: {error}"))
            continue
        derive = DERIVED.get(name)
        rows = list(result.get("headlines", [])) or (derive(result) if derive is not None else [])
        out.append(Section(name, paper, exp.title, rows, str(result.get("summary", ""))))
    progress(1.0, "done")
    return out


def summary_rows(sections: Sequence[Section]) -> list[list[str]]:
    """One row per headline over every section (the report's summary table)."""
    rows = []
    for s in sections:
        for h in s.headlines:
            rows.append([f"{h['paper']} {s.name}", f"\"{h['quote']}\" ({h['section']})", h["paper_value"], h["ours"],
                         h["verdict"], h["cause"]])
    return rows


def counts(sections: Sequence[Section]) -> dict[str, Counter[str]]:
    """paper -> verdict -> number of headlines."""
    out: dict[str, Counter[str]] = {p: Counter() for p in PAPERS}
    for s in sections:
        for h in s.headlines:
            out.setdefault(s.paper, Counter())[h["verdict"]] += 1
    return out


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(sections: Sequence[Section], *, quick: bool) -> str:
    """The report as Markdown (``docs/fidelity.md``)."""
    size = "quick (CI) size" if quick else "full size (each experiment's defaults)"
    lines = [
        "# Fidelity report: each paper's headlines under the paper's own set-up",
        "",
        f"Generated by `python -m simulator.experiments report{' --quick' if quick else ''}` ({size}); "
        "do not edit by hand. Verdicts follow the rule fixed in `simulator/experiments/fidelity.py` before any run: "
        "**reproduced** (the paper's number inside our 95 % interval widened by 10 % of it, or the claimed direction "
        "holds at 95 %), **shape only** (the direction holds, the number is off by at most 3x), **differs (magnitude)** "
        "(the direction holds, the number is off by more than 3x or has the other sign; added 2026-11-28), **differs**, "
        "**not testable** (the model rules the number out for every policy; the cause says what it lacks; added 2026-11-28). "
        "Each experiment's page "
        "in the lab (`/lab/`) carries the same rows, its set-up table (paper's text or \"paper silent; chosen: ...; "
        "because ...; sensitivity: ...\") and its figures.",
        "",
        "## Verdicts per paper",
        "",
        "| paper | " + " | ".join(VERDICTS) + " |",
        "|---|" + "---|" * len(VERDICTS),
    ]
    for paper, c in counts(sections).items():
        lines.append(f"| {paper} {PAPERS.get(paper, '')} | " + " | ".join(str(c.get(v, 0)) for v in VERDICTS) + " |")
    lines += ["", "## Summary table", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in summary_rows(sections)]
    for paper, name in PAPERS.items():
        lines += ["", f"## {paper}: {name}", ""]
        for s in (s for s in sections if s.paper == paper):
            lines.append(f"### `{s.name}`: {s.title}")
            lines.append("")
            if s.error:
                lines += [f"Did not run: {s.error}.", ""]
                continue
            if s.summary:
                lines += [_cell(s.summary), ""]
            if not s.headlines:
                lines += ["No headline rows (a supporting experiment).", ""]
    return "\n".join(lines) + "\n"


def write(path: Path, *, quick: bool, progress: Progress) -> list[Section]:
    """Run the report and write it to ``path`` (directories created); returns the sections."""
    sections = run_all(quick=quick, progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(sections, quick=quick), encoding="utf-8")
    return sections


def run(params: Params, progress: Progress) -> Result:
    """The report as a registered experiment: the summary table, the verdict counts and each run's summary."""
    quick = str(params["size"]) == "quick"
    if str(params["size"]) not in {"quick", "full"}:
        raise ValueError("size: quick or full")
    sections = run_all(quick=quick, progress=progress)
    tallies = counts(sections)
    verdict_rows = [[f"{p} {PAPERS.get(p, '')}", *[c.get(v, 0) for v in VERDICTS]] for p, c in tallies.items()]
    runs = [[s.name, s.paper, s.error or "ran", len(s.headlines), s.summary] for s in sections]
    total = Counter(v for c in tallies.values() for v in c.elements())
    return {
        "figures": [],
        "tables": [
            table("Summary: one row per headline", COLUMNS, summary_rows(sections),
                  note="Verdict rule: simulator/experiments/fidelity.py. The same table is docs/fidelity.md."),
            table("Verdicts per paper", ["paper", *VERDICTS], verdict_rows),
            table("Experiments run", ["experiment", "paper", "status", "headline rows", "summary"], runs),
        ],
        "summary": (f"{sum(total.values())} headlines over {len(sections)} experiments: "
                    + ", ".join(f"{total.get(v, 0)} {v}" for v in VERDICTS) + f" ({'quick' if quick else 'full'} size)."),
    }


EXPERIMENT = register(Experiment(
    name="fidelity_report",
    title="Fidelity report: each paper's headlines under the paper's own set-up",
    source="papers 000-004 (docs/fidelity.md)",
    run=run,
    defaults={"size": "full"},
    choices={"size": ["full", "quick"]},
    description=("Runs every paper experiment and puts each headline beside the paper: the quote with its section, the "
                 "paper's value, ours with its 95 % interval, a verdict (reproduced, shape only, differs (magnitude), differs) "
                 "and its cause. "
                 "The command line writes the same report to docs/fidelity.md."),
    help={"size": "full (each experiment's defaults; tens of minutes) or quick (the CI sizes; a few minutes)"},
))

