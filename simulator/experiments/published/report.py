"""The study's numbers turned into tables, figures and one paragraph per trace.

Every estimate is the mean over the replicas (windows) with a two-sided 95 %
Student-t interval (``simulator.whatif.compare.estimate``); the paired table
compares each configuration with H-LTRF window by window (the windows differ
far more from each other than the policies do on one window). The
paragraphs are assembled from these numbers: which configuration wins which
metric, by how much, whether the interval excludes no change, and the
mechanism of the winner that explains it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulator.experiments import figure, finite, table
from simulator.experiments.published.setup import CONFIGS, TRACES
from simulator.whatif.compare import Estimate, estimate, human

BASELINE = "H-LTRF"
# (key, column title, lower is better) -- compact_result's metrics plus the window utilisation and payments
METRICS: tuple[tuple[str, str, bool], ...] = (
    ("mean_response_s", "mean JCT (sim s)", True),
    ("p95_response_s", "p95 JCT (sim s)", True),
    ("mean_slowdown", "mean slowdown", True),
    ("rho_max", "max finish-time fairness rho", True),
    ("rho_above_1", "jobs with rho > 1 (fraction)", True),
    ("sharing_benefit", "sharing benefit Ψ (Eq. 4)", False),
    ("sharing_loss", "sharing loss Ω (Eq. 5)", False),
    ("utilisation", "utilisation over the window", False),
    ("welfare_share", "welfare / requested value", False),
    ("payments", "payments (money)", False),
)
TITLE = {k: t for k, t, _ in METRICS}
# what each configuration does, for the paragraph's "why" (the winner's mechanism)
MECHANISM = {
    "LTRF": "hands each free unit to the queue with the least accumulated usage",
    "H-LTRF": "walks the queue tree by accumulated usage and serves a starved queue after T_wait",
    "H-LTRF + equal share": "walks the queue tree as H-LTRF does and splits each queue's units equally among its jobs",
    "Abacus over H-LTRF": "is a market: H-LTRF across queues, each queue's units split by the budget auction's shares",
    "ERA reservations over H-LTRF": "is a market: the jobs whose value covers Basic-Econ's price run on reserved units, "
                                    "sized from their exact task counts and durations",
    "DRF": "gives the next unit to the queue with the lowest dominant share now, without memory",
    "DRF + equal share": "gives the next unit to the queue with the lowest dominant share and splits it equally among its jobs",
    "Slurm": "ranks queues by 2^(-U/S) recomputed every 5 minutes, so one queue takes every free unit until the next calculation",
    "Slurm + equal share": "ranks queues by 2^(-U/S) and splits each queue's units equally among its jobs",
    "Karma": "serves guaranteed shares first and then the queue with the most credits",
    "Karma + equal share": "serves guaranteed shares, then the richest queue, and splits each queue's units equally among its jobs",
    "Tiresias": "serves the job with the least attained service first, so short jobs overtake long ones",
    "Tiresias, three limits": "serves the job with the least attained service first, in four queues",
    "Themis (exact sizes)": "auctions free units to the jobs furthest behind their 1/N finish time, reading every job's exact size",
    "Themis (attained service)": "auctions free units to the jobs furthest behind their 1/N finish time, sizes estimated from progress",
    "SRPT (exact sizes)": "serves the job with the least remaining work first, reading every job's exact size",
}
INSIDE = {c.label: c.inside for c in CONFIGS}
SIZES = {c.label: c.sizes for c in CONFIGS}
JOB_LEVEL = tuple(c.label for c in CONFIGS if c.inside == "jobs ranked across queues")
# (configuration, its control, what the difference isolates): the controls' paired comparisons
CONTROLS: tuple[tuple[str, str, str], ...] = (
    ("H-LTRF + equal share", "H-LTRF", "sharing inside the queue under H-LTRF"),
    ("DRF + equal share", "DRF", "sharing inside the queue under DRF"),
    ("Slurm + equal share", "Slurm", "sharing inside the queue under Slurm"),
    ("Karma + equal share", "Karma", "sharing inside the queue under Karma"),
    ("Abacus over H-LTRF", "H-LTRF + equal share", "Abacus' budget auction against equal shares, the same stride dispatch"),
    ("Abacus over H-LTRF", "H-LTRF", "the market against FIFO inside the queues (what the study credited to Abacus before)"),
    ("ERA reservations over H-LTRF", "H-LTRF", "ERA's reservations (exact sizes) against H-LTRF"),
    ("Themis (exact sizes)", "SRPT (exact sizes)", "Themis' auction against SRPT with the same size oracle"),
    ("Themis (attained service)", "Themis (exact sizes)", "Themis estimating sizes from progress against reading them"),
    ("Tiresias, three limits", "Tiresias", "Tiresias' three-limit variant against the authors' two queues"),
)

Rows = Sequence[Mapping[str, Any]]


def _value(row: Mapping[str, Any], key: str) -> float | None:
    v = row["metrics"].get(key)
    return None if v is None or not math.isfinite(float(v)) else float(v)


def estimates(rows: Rows) -> dict[str, dict[str, dict[str, Estimate]]]:
    """trace -> policy -> metric -> estimate over the trace's windows."""
    out: dict[str, dict[str, dict[str, Estimate]]] = {}
    for trace in _ordered(r["trace"] for r in rows):
        out[trace] = {}
        for policy in _ordered(r["policy"] for r in rows if r["trace"] == trace):
            group = [r for r in rows if r["trace"] == trace and r["policy"] == policy]
            out[trace][policy] = {k: estimate([_value(r, k) for r in group]) for k, _, _ in METRICS}
    return out


def paired(rows: Rows, key: str, relative: bool, baseline: str = BASELINE) -> dict[str, dict[str, Estimate]]:
    """trace -> policy -> change of ``key`` against ``baseline`` on the same window (relative: percent)."""
    base = {(r["trace"], r["seed"]): _value(r, key) for r in rows if r["policy"] == baseline}
    out: dict[str, dict[str, Estimate]] = {}
    for trace in _ordered(r["trace"] for r in rows):
        out[trace] = {}
        for policy in _ordered(r["policy"] for r in rows if r["trace"] == trace):
            diffs: list[float | None] = []
            for r in rows:
                if r["trace"] != trace or r["policy"] != policy:
                    continue
                b, v = base.get((trace, r["seed"])), _value(r, key)
                if b is None or v is None or (relative and b == 0):
                    diffs.append(None)
                else:
                    diffs.append(100.0 * (v - b) / abs(b) if relative else v - b)
            out[trace][policy] = estimate(diffs)
    return out


PAIRED = (("mean_response_s", True, "Δ mean JCT (%)"), ("p95_response_s", True, "Δ p95 JCT (%)"), ("rho_max", True, "Δ max rho (%)"),
          ("rho_above_1", False, "Δ jobs with rho > 1 (fraction)"), ("sharing_loss", False, "Δ sharing loss Ω"))  # fmt: skip


def _ordered(items: Any) -> list[str]:
    return list(dict.fromkeys(items))


def _bar_figures(est: Mapping[str, Mapping[str, Mapping[str, Estimate]]], pair: Mapping[str, Mapping[str, Mapping[str, Estimate]]],
                 policies: Sequence[str]) -> list[dict[str, Any]]:  # fmt: skip
    traces = list(est)
    names = [TRACES[t] for t in traces]

    def bars(get: Any) -> list[dict[str, Any]]:
        data = []
        for p in policies:
            vals = [get(t, p) for t in traces]
            data.append({"type": "bar", "name": p, "x": names, "y": [finite(e.mean, 4) if e else None for e in vals],
                         "error_y": {"type": "data", "visible": True,
                                     "array": [finite(e.half_width, 4) if e else None for e in vals]}})  # fmt: skip
        return data

    def of(key: str) -> Any:
        return lambda t, p: est[t].get(p, {}).get(key)

    def change(key: str) -> Any:
        return lambda t, p: pair[key][t].get(p)

    return [
        figure("Mean job completion time against H-LTRF on the same window (paired, 95 % CI)", bars(change("mean_response_s")),
               x_title="trace", y_title="change of mean JCT (%)", barmode="group"),
        figure("p95 job completion time against H-LTRF (paired, 95 % CI)", bars(change("p95_response_s")),
               x_title="trace", y_title="change of p95 JCT (%)", barmode="group"),
        figure("Worst finish-time fairness: max rho = T_shared / T_ideal (Themis, Sec. 3)", bars(of("rho_max")),
               x_title="trace", y_title="max rho (log)", barmode="group", yaxis={"type": "log", "title": {"text": "max rho (log)"}}),
        figure("Jobs slowed by sharing: share with rho > 1", bars(of("rho_above_1")), x_title="trace", y_title="fraction of jobs",
               barmode="group"),
        figure("Sharing loss Ω at the end (paper 002, Eq. 5; 0 = no queue lost)", bars(of("sharing_loss")), x_title="trace",
               y_title="Ω (≤ 0)", barmode="group"),
        figure("Sharing benefit Ψ at the end (paper 002, Eq. 4)", bars(of("sharing_benefit")), x_title="trace", y_title="Ψ (≥ 0)",
               barmode="group"),
        figure("Utilisation over the window", bars(of("utilisation")), x_title="trace", y_title="busy units / capacity", barmode="group"),
        figure("Welfare: value of the jobs done by their deadline (paper 001, Sec. 4)", bars(of("welfare_share")), x_title="trace",
               y_title="share of the requested value", barmode="group"),
    ]  # fmt: skip


def _text(e: Estimate | None, digits: int = 4) -> str:
    return "—" if e is None else e.text(digits)


def _summary_tables(est: Mapping[str, Mapping[str, Mapping[str, Estimate]]], pair: Mapping[str, Any], n_windows: Mapping[str, int]
                    ) -> list[dict[str, Any]]:  # fmt: skip
    out = []
    for trace, by_policy in est.items():
        rows = [[p, INSIDE.get(p, ""), SIZES.get(p, ""), *[_text(e[k]) for k, _, _ in METRICS]] for p, e in by_policy.items()]
        out.append(table(f"{TRACES[trace]}: metrics over {counted(n_windows[trace], 'window')} (mean ± 95 % CI)",
                         ["configuration", "inside a queue", "reads before a job runs", *[t for _, t, _ in METRICS]], rows,
                         note="Payments only where the configuration has money (Abacus: budgets charged at completion; "
                              "ERA: the accepted reservations' prices). \"exact job sizes\": every task count and duration "
                              "of a job before it runs (an oracle)."))  # fmt: skip
        rows = [[p, *[_text(pair[k][trace].get(p), 3) for k, _, _ in PAIRED]] for p in by_policy]
        out.append(table(f"{TRACES[trace]}: change against H-LTRF on the same window (mean ± 95 % CI)",
                         ["configuration", *[t for _, _, t in PAIRED]], rows))  # fmt: skip
    return out


def _export_table(est: Mapping[str, Mapping[str, Mapping[str, Estimate]]]) -> dict[str, Any]:
    rows = [[TRACES[t], p, TITLE[k], finite(e.mean, 6), finite(e.half_width, 6), e.n]
            for t, by_p in est.items() for p, by_k in by_p.items() for k, e in by_k.items() if e.n]  # fmt: skip
    return table("All estimates (for export)", ["trace", "configuration", "metric", "mean", "95 % CI half-width", "windows"], rows)


def _runs_table(rows: Rows) -> dict[str, Any]:
    keys = [k for k, _, _ in METRICS]
    body = [[TRACES[r["trace"]], r["seed"], r["policy"], r["cell"]["start_h"], r["cell"]["jobs"],
             ", ".join(map(str, r["cell"]["capacity"])), r["cell"]["time_scale"], *[finite(_value(r, k), 6) for k in keys]]
            for r in rows]  # fmt: skip
    return table("Every run", ["trace", "seed", "configuration", "window start (h)", "jobs", "capacity (units per type)",
                               "arrival compression", *[TITLE[k] for k in keys]], body)  # fmt: skip


def _best(by_policy: Mapping[str, Mapping[str, Estimate]], key: str, lower: bool) -> tuple[list[str], Estimate] | None:
    """The configurations with the best mean of ``key`` (several when tied) and the best estimate; None without a value."""
    known = [(p, e[key]) for p, e in by_policy.items() if e[key].n and math.isfinite(e[key].mean)]
    if not known:
        return None
    best = min(known, key=lambda pe: pe[1].mean if lower else -pe[1].mean)
    tied = [p for p, e in known if abs(e.mean - best[1].mean) <= 1e-9 * max(1.0, abs(best[1].mean))]
    return tied, best[1]


def _names(names: Sequence[str]) -> str:
    """Configurations in a sentence: "LTRF", "LTRF and H-LTRF", "LTRF, H-LTRF and Karma"; when a name holds a
    comma ("Tiresias, three limits") the items are separated by semicolons so that no name reads as two."""
    if len(names) < 2:
        return "".join(names)
    sep = "; " if any("," in n for n in names) else ", "
    return sep.join(names[:-1]) + " and " + names[-1]


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless n is 1: "1 window", "10 windows"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _significant(pair: Mapping[str, Estimate], *, below: bool) -> list[str]:
    """Configurations whose paired change's interval lies wholly below (or above) 0, each with its change
    printed to the interval's precision (:func:`_change`)."""
    out = []
    for p, e in pair.items():
        if p == BASELINE or e.n < 2 or not math.isfinite(e.half_width):
            continue
        if (below and e.mean + e.half_width < 0) or (not below and e.mean - e.half_width > 0):
            out.append(f"{p} ({_change(e)} %)")
    return out


def _pct(x: float) -> str:
    """A signed percentage to one decimal, or to two significant digits when that would read 0.0
    (a significant change of +0.04 % must not print as "+0.0 %")."""
    if x != 0 and abs(x) < 0.05:
        return f"{x:+.2g}"
    return f"{x:+.1f}"


def _decimals(half_width: float) -> int:
    """Decimals that show a positive finite ``half_width`` to two significant digits (none from 10 up)."""
    return max(0, 1 - math.floor(math.log10(half_width)))


def _change(e: Estimate) -> str:
    """A paired change (percent) with its sign, to the precision of its interval's two significant digits, so that a
    reader doing the sum reaches the verdict printed beside it (:func:`_verdict`): "-0.62 % ± 0.58", never "-0.6 %
    ± 0.58". A change outside its interval is larger than it, so it never prints as "+0.0"; without an interval
    (one window, or identical windows) :func:`_pct`."""
    if e.n < 2 or not math.isfinite(e.half_width) or e.half_width <= 0:
        return _pct(e.mean)
    return f"{e.mean:+,.{_decimals(e.half_width)}f}"


def _interval(e: Estimate) -> str:
    """A paired change's "± half-width" to two significant digits in plain notation ("± 120", never "± 1.2e+02")."""
    return f"± {human(e.half_width, 2)}"


def _verb(names: Sequence[str], singular: str, plural: str) -> str:
    """``singular`` for one configuration, ``plural`` for tied ones ("LTRF and H-LTRF have")."""
    return plural if len(names) > 1 else singular


def paragraph(trace: str, rows: Rows, est: Mapping[str, Mapping[str, Estimate]], pair: Mapping[str, Mapping[str, Any]]) -> str:
    """What wins where on ``trace`` and why, from the run's numbers (module docstring)."""
    mine = [r for r in rows if r["trace"] == trace and r["policy"] == BASELINE] or [r for r in rows if r["trace"] == trace]
    jobs = np.mean([r["cell"]["jobs"] for r in mine])
    cap = np.mean([r["cell"]["capacity"] for r in mine], axis=0)
    util = [u for r in rows if r["trace"] == trace for u in [_value(r, "utilisation")] if u is not None]
    fast, slow = _best(est, "mean_response_s", True), _best(est, "mean_response_s", False)
    fair, unfair = _best(est, "rho_max", True), _best(est, "rho_max", False)
    few, loss = _best(est, "rho_above_1", True), _best(est, "sharing_loss", False)
    if not (fast and slow and fair and unfair and few and loss):
        return f"{TRACES[trace]}: no finished job to compare."
    jct = pair["mean_response_s"][trace]
    units = f"{cap[0]:,.0f} map + {cap[1]:,.0f} reduce" if len(cap) == 2 else " + ".join(f"{c:,.0f}" for c in cap)
    text = (f"{TRACES[trace]} ({counted(len(mine), 'window')}, {jobs:,.0f} jobs and {units} units on average, "
            f"utilisation over the window {np.mean(util):.2f} on average, {min(util):.2f} to {max(util):.2f}): ")
    text += (f"{_names(fast[0])} {_verb(fast[0], 'has', 'have')} the lowest mean job completion time ({fast[1].text(3)} s "
             f"against {human(slow[1].mean, 3)} s for {_names(slow[0])}); "
             f"{_how(fast[0])}. ")
    faster, slower = _significant(jct, below=True), _significant(jct, below=False)
    text += (f"Against H-LTRF on the same windows, faster with 95 % confidence: {', '.join(faster) or 'none'}; "
             f"slower: {', '.join(slower) or 'none'}. ")
    text += (f"The worst-off job fares best under {_names(fair[0])} (max rho {fair[1].text(3)}) and worst under "
             f"{_names(unfair[0])} (max rho {human(unfair[1].mean, 3)}); {_names(few[0])} {_verb(few[0], 'slows', 'slow')} the "
             f"fewest jobs by sharing ({100 * few[1].mean:.1f} % with rho > 1), and {_names(loss[0])} "
             f"{_verb(loss[0], 'leaves', 'leave')} the smallest long-term sharing loss (Ω {loss[1].text(3)}). ")
    text += _tradeoff(est, fast[0], fair[0])
    return text


def _how(names: Sequence[str]) -> str:
    """The mechanism of a (possibly tied) winner, for the paragraph's "why"."""
    said = [f"{p} {MECHANISM[p]}" for p in names if p in MECHANISM]
    return "; ".join(said) if said else _names(names)


def _tradeoff(est: Mapping[str, Mapping[str, Estimate]], fast: Sequence[str], fair: Sequence[str]) -> str:
    """The cost of the fastest configuration in fairness (or its absence), from the numbers."""
    if list(fast) == list(fair):
        return f"Here the same configuration{'s win' if len(fast) > 1 else ' wins'} both: {_names(fast)}."
    if len(fast) > 1 or len(fair) > 1:  # a tie on either metric: no single pair to weigh
        return f"The fastest ({_names(fast)}) and the fairest ({_names(fair)}) differ."
    f, g = fast[0], fair[0]
    kinds = {p: "job-level" if p in JOB_LEVEL else "queue-level" for p in (f, g)}
    r_fast, r_fair = est[f]["rho_max"].mean, est[g]["rho_max"].mean
    j_fast, j_fair = est[f]["mean_response_s"].mean, est[g]["mean_response_s"].mean
    versus = f"{g}'s mean completion time is {_pct(100 * (j_fair / j_fast - 1))} % against it; {_how(fair)}."
    if human(r_fast / r_fair, 2) == "1":  # "1 times": no price in the tail worth the words
        return (f"The fastest ({kinds[f]} {f}) and the fairest ({g}) have about the same max rho ({human(r_fast, 3)} against "
                f"{human(r_fair, 3)}); {versus}")
    return f"The fastest ({kinds[f]} {f}) pays in the tail: its max rho is {human(r_fast / r_fair, 2)} times that of {g}; {versus}"


def control_changes(rows: Rows) -> dict[tuple[str, str], dict[str, Estimate]]:
    """(configuration, control) -> trace -> paired change of the mean JCT (%), for every pair of ``CONTROLS`` that ran."""
    ran = {r["policy"] for r in rows}
    out = {}
    for config, control, _ in CONTROLS:
        if config in ran and control in ran:
            out[(config, control)] = {t: by_p[config] for t, by_p in paired(rows, "mean_response_s", True, control).items()
                                      if config in by_p}  # fmt: skip
    return out


def _verdict(e: Estimate) -> str:
    if e.n < 2 or not math.isfinite(e.half_width):
        return "one window"
    if e.mean + e.half_width < 0:
        return "faster"
    return "slower" if e.mean - e.half_width > 0 else "no difference at 95 %"


def _control(what: str, config: str, control: str, e: Estimate) -> str:
    """One control's clause: its paired change of mean JCT with the interval at the change's precision and the verdict;
    "identical on every window" when every window gave the same time (not "+0.0 % ± 0"), "on every window" for one change
    everywhere (not "± 0"), no interval from one window."""
    head = f"{what}: {config} vs {control}"
    if e.n >= 2 and e.mean == 0 and e.half_width == 0:
        return f"{head} identical on every window"
    if _verdict(e) == "one window":
        return f"{head} {_pct(e.mean)} % (one window, no interval)"
    if e.half_width == 0:  # the same change on every window: no "± 0"
        return f"{head} {_pct(e.mean)} % on every window ({_verdict(e)})"
    return f"{head} {_change(e)} % {_interval(e)} ({_verdict(e)})"


def controls_paragraph(trace: str, changes: Mapping[tuple[str, str], Mapping[str, Estimate]]) -> str:
    """What the controls isolate on ``trace``: each pair's paired change of mean JCT, then what follows from the signs."""
    said = []
    for config, control, what in CONTROLS:
        e = changes.get((config, control), {}).get(trace)
        if e is not None and e.n:
            said.append(_control(what, config, control, e))
    if not said:
        return f"{TRACES[trace]}: no control ran."
    text = f"{TRACES[trace]}, controls (paired change of mean JCT on the same windows): " + "; ".join(said) + ". "
    share = changes.get(("H-LTRF + equal share", "H-LTRF"), {}).get(trace)
    auction = changes.get(("Abacus over H-LTRF", "H-LTRF + equal share"), {}).get(trace)
    if share is not None and auction is not None and share.n >= 2:
        if _verdict(share) == "faster" and _verdict(auction) != "faster":
            text += ("Abacus' lead over H-LTRF comes from sharing inside the queue: equal shares alone give it, and the budget "
                     "auction adds nothing significant on top. ")
        elif _verdict(auction) == "faster":
            text += "Abacus' budget auction is faster than equal shares under the same dispatch: the auction itself helps. "
    srpt = changes.get(("Themis (exact sizes)", "SRPT (exact sizes)"), {}).get(trace)
    if srpt is not None and srpt.n >= 2:
        if _verdict(srpt) == "slower":
            text += ("SRPT with the same size oracle is faster than Themis: Themis' speed comes from reading exact sizes, "
                     "not from its auction. ")
        elif _verdict(srpt) == "faster":
            text += "Themis is faster than SRPT with the same size oracle. "
    est = changes.get(("Themis (attained service)", "Themis (exact sizes)"), {}).get(trace)
    if est is not None and est.n >= 2 and _verdict(est) == "slower":
        text += "Without the oracle (sizes from attained service) Themis loses part of that speed. "
    return text.strip()


def build(rows: Rows, policies: Sequence[str]) -> dict[str, Any]:
    """Figures, tables and summary of the study's ``rows`` (one per trace, window and configuration)."""
    est = estimates(rows)
    pair = {k: paired(rows, k, rel) for k, rel, _ in PAIRED}
    n_windows = {t: len({r["seed"] for r in rows if r["trace"] == t}) for t in est}
    changes = control_changes(rows)
    paragraphs = [paragraph(t, rows, est[t], pair) + " " + controls_paragraph(t, changes) for t in est]
    return {
        "figures": _bar_figures(est, pair, policies),
        "tables": [
            table("What wins where, and why (from this run's numbers)", ["trace", "paragraph"],
                  [[TRACES[t], p] for t, p in zip(est, paragraphs, strict=True)]),
            *_summary_tables(est, pair, n_windows), _export_table(est), _runs_table(rows),
        ],
        "summary": "\n\n".join(paragraphs),
        "paragraphs": {TRACES[t]: p for t, p in zip(est, paragraphs, strict=True)},
    }
