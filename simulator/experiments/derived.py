"""Headline rows for the experiments that predate the fidelity report's rows (docs/fidelity.md), read from their own result.

These experiments put their numbers beside the paper in a "Beside the paper" (or summary)
table but return no ``headlines``; their modules are left as they are (another change is
rewriting some of their summaries). :data:`DERIVED` turns such a result into headline rows
(``fidelity.headline``) with the verdict rule applied to what the table holds. Their numbers
carry no interval, and every row says so: they are the experiments' point values over the
seeds they ran.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from simulator.experiments import Result
from simulator.experiments.fidelity import headline, scaled_verdict

NO_CI = " (no interval: this experiment predates the fidelity statistics)"


def _table(result: Result, prefix: str) -> list[list[Any]]:
    for t in result.get("tables", []):
        if str(t.get("title", "")).startswith(prefix):
            return [list(r) for r in t["rows"]]
    return []


def _number(text: Any) -> float | None:
    m = re.search(r"[-+]?\d+(?:\.\d+)?", str(text))
    return float(m.group()) if m else None


def _yes(paper: str, section: str, quote: str, ours: str, cause: str) -> dict[str, str]:
    ok = str(ours).strip().lower().startswith("yes")
    return headline(paper=paper, section=section, quote=quote, paper_value="yes", ours=str(ours) + NO_CI,
                    verdict="reproduced" if ok else "differs", cause="" if ok else cause)


def fig9a(result: Result) -> list[dict[str, str]]:
    rows = {r[0]: r for r in _table(result, "Beside the paper")}
    out = []
    for claim, quote in (("user 3's efficiency rises with its budget", "When the budget of user #3 grows, the efficiency of the jobs "
                          "from user #3 improves"),
                         ("with diminishing returns (gain per $ falls)", "The efficiency gains slow down as the amount of budget "
                          "increases"),
                         ("users 1 and 2 lose efficiency", "the performance of the jobs from the other two users decreases")):
        if claim in rows:
            out.append(_yes("000", "Sec. 7.1.2, Fig. 9a", quote, rows[claim][2], "see the experiment's table"))
    return out


def fig9b(result: Result) -> list[dict[str, str]]:
    rows = _table(result, "Beside the paper")
    out = []
    peak = next((r for r in rows if str(r[0]).startswith("ratio where")), None)
    if peak is not None:
        at = _number(peak[2])
        verdict = "reproduced" if at in (4.0, 6.0) else ("shape only" if at is not None and 2.0 <= at <= 16.0 else "differs")
        out.append(headline(paper="000", section="Sec. 7.1.2, Fig. 9b", quote="The job efficiency for user #3 is maximized when the "
                            "ratio on weights is 4:1, which is closest to the true ratio", paper_value="peak at 4 (true about 6)",
                            ours=f"peak at {peak[2]}" + NO_CI, verdict=verdict,
                            cause="" if verdict == "reproduced" else "over-reporting the map weight costs little: the peak is "
                            "flat beyond 4 and its place moves with the slot split (the experiment's docstring)"))
    for r in rows:
        if str(r[0]).startswith("user 3 at ratio"):
            m = re.match(r"\s*([-+]?\d+(?:\.\d+)?)\s*\+-\s*(\d+(?:\.\d+)?)", str(r[2]))
            if not m:
                continue
            diff, half = float(m.group(1)), float(m.group(2))
            verdict = "reproduced" if diff - half > 0 else ("shape only" if diff > 0 else "differs")
            out.append(headline(paper="000", section="Sec. 7.1.2, Fig. 9b", quote="user 3 does better reporting near its true ratio "
                                f"({r[0]})", paper_value="> 0", ours=f"{r[2]} (mean +- 95 % half-width over seeds)", verdict=verdict,
                                cause="" if verdict == "reproduced" else "within the seeds' spread"))
    return out


def fig9c(result: Result) -> list[dict[str, str]]:
    rows = {r[0]: r for r in _table(result, "Beside the paper")}
    claim = "larger alpha spreads the users apart"
    if claim not in rows:
        return []
    return [_yes("000", "Sec. 7.1.2, Fig. 9c", "With larger values of alpha, Abacus tends to distinguish jobs based on their profiles",
                 rows[claim][2], "the spread does not grow with alpha here")]


def fig10(result: Result) -> list[dict[str, str]]:
    rows = {r[0]: r for r in _table(result, "Beside the paper")}
    out = []
    worst = rows.get("Abacus at most this much slower than FIFO")
    if worst is not None:
        value = _number(worst[2])
        ok = value is not None and value <= 5.0
        out.append(headline(paper="000", section="Sec. 7.1.3, Fig. 10(a)", quote="the total completion time of Abacus in these settings "
                            "is only slightly worse (at most 5% more) compared to FIFO", paper_value="<= 5 %",
                            ours=f"{worst[2]} at worst" + NO_CI, verdict="reproduced" if ok else "differs",
                            cause="met trivially: with the work bound close to FIFO's time Abacus and FIFO tie (abacus_fig10bc "
                            "measures the bound)" if ok else "Abacus is slower than FIFO by more than 5 %"))
    few = rows.get("Abacus ahead with few users (< 5)")
    if few is not None:
        values = [float(v) for v in re.findall(r":\s*([-+]?\d+(?:\.\d+)?)", str(few[2]))]
        ahead = [v < 0 for v in values]
        verdict = "reproduced" if values and all(ahead) else ("shape only" if any(ahead) else "differs")
        out.append(headline(paper="000", section="Sec. 7.1.3, Fig. 10(a)", quote="when the number of users is relatively low (i.e., "
                            "less than 5), Abacus outperforms FIFO on system overall performance in most settings",
                            paper_value="Abacus faster than FIFO", ours=f"Abacus vs FIFO: {few[2]}" + NO_CI, verdict=verdict,
                            cause="" if verdict == "reproduced" else "a tie: the work bound, not the order, sets the total time"))
    return out


def cura_fig5(result: Result) -> list[dict[str, str]]:
    out = []
    for r in _table(result, "Cura beside the paper"):
        ours, paper = _number(r[1]), _number(r[2])
        if ours is None or paper is None:
            continue
        band = 0.1 * paper
        verdict = "reproduced" if abs(ours - paper) <= band else scaled_verdict("shape only" if ours > 0 else "differs", paper, paper, ours)
        out.append(headline(paper="004", section="Sec. IV-B 1, Fig. 5", quote=f"Cura ... {r[0]} (up to)", paper_value=str(r[2]),
                            ours=f"{r[1]} (best over the deadlines)" + NO_CI, verdict=verdict,
                            cause="" if verdict == "reproduced" else "the per-job clusters' VM boot time is assumed (cura_reconfig "
                            "sweeps it) and the VM-affinity law is ours"))
    return out


def cura_table7(result: Result) -> list[dict[str, str]]:
    rows = _table(result, "Summary (15 jobs")
    if len(rows) < 2:
        return []
    on_opt = int(rows[1][4])
    return [headline(paper="004", section="App. A, Table VII", quote="all the jobs of job type 1 and job type 4 are scheduled using their "
                     "optimal VM type VM-1. Similarly type 2 and type 3 jobs also obtain their optimal VM types",
                     paper_value="15 of 15 on their optimal type", ours=f"{on_opt} of 15 on the paper's Table VII pools" + NO_CI,
                     verdict="reproduced" if on_opt >= 14 else ("shape only" if on_opt >= 8 else "differs"),
                     cause="" if on_opt >= 14 else "the paper's Table VII itself runs job 12 past its deadline; on those pools no "
                     "configuration meets it and Cura does not run it")]


def ltrf_trace(result: Result) -> list[dict[str, str]]:
    rows = {r[0]: r for r in _table(result, "Per policy")}
    out = []
    if "MLRF" in rows and "LTRF" in rows:
        mlrf, ltrf = float(rows["MLRF"][2]), float(rows["LTRF"][2])
        ok = ltrf > mlrf
        out.append(headline(paper="002", section="Sec. 7.4, Fig. 7 (on a real trace)", quote="LTYARN has a much better result than HFS "
                            "[on sharing loss]", paper_value="LTRF's Ω above MLRF's", ours=f"mean Ω after warm-up: LTRF {ltrf:.3f}, "
                            f"MLRF {mlrf:.3f} (one slice)" + NO_CI, verdict="reproduced" if ok else "differs",
                            cause="" if ok else "see ltrf_kth_isolation: over ten slices the difference is within the spread, and "
                            "folding the users into 4 queues restores LTRF's lead"))
    naive = next((r for k, r in rows.items() if "naive" in k), None)
    hltrf = [r for k, r in rows.items() if k.startswith("H-LTRF") and "naive" not in k]
    if naive is not None and hltrf:
        best = min(float(r[8]) for r in hltrf)
        ok = best < 0.9 * float(naive[8])
        out.append(headline(paper="002", section="Sec. 7.6 (on a real trace)", quote="H-LTRF can alleviate the starvation problem in "
                            "recursively collective resource allocation significantly", paper_value="H-LTRF's waits below the naive's",
                            ours=f"p95 wait: naive {naive[8]} h, H-LTRF {best} h (one slice)" + NO_CI,
                            verdict="reproduced" if ok else "differs",
                            cause="" if ok else "on this slice no group's history starves a sibling for long (ltrf_fig10 shows "
                            "the case on the paper's workload)"))
    return out


DERIVED: Mapping[str, Callable[[Result], list[dict[str, str]]]] = {
    "abacus_fig9a": fig9a, "abacus_fig9b": fig9b, "abacus_fig9c": fig9c, "abacus_fig10": fig10, "cura_fig5": cura_fig5,
    "cura_table7": cura_table7, "ltrf_traces_kth": ltrf_trace, "ltrf_traces_lcg": ltrf_trace,
}
