"""The published study's sentence builders (``simulator.experiments.published.report``) on made-up numbers: verbs agree
with the number of configurations named, counts agree with their nouns, no number prints in scientific notation or as
"nan", a change is printed to the precision of its interval (so the printed sum agrees with the verdict beside it), and
a name holding a comma ("Tiresias, three limits") is never split into two configurations."""

from __future__ import annotations

import re
from typing import Any

import pytest

from simulator.experiments.published import document, report
from simulator.experiments.published.report import METRICS
from simulator.whatif.compare import Estimate

GLITCHES = re.compile(r"\de[+-]\d|\bnan\b|\b1 windows\b|\(\+0\.0 %\)|\(-0\.0 %\)|± 0 \(|\b1 times\b")


def _rows(per_policy: dict[str, list[dict[str, float]]], trace: str = "fb2009") -> list[dict[str, Any]]:
    """Rows as the study makes them: one per (window, configuration), every metric given (missing ones 0)."""
    rows = []
    for policy, windows in per_policy.items():
        for seed, metrics in enumerate(windows):
            rows.append({"trace": trace, "seed": seed, "policy": policy,
                         "metrics": {k: metrics.get(k, 0.0) for k, _, _ in METRICS},
                         "cell": {"jobs": 100, "capacity": [40, 20], "start_h": 1.0, "time_scale": 1.0}})
    return rows


def _metrics(jct: float, rho: float, **more: float) -> dict[str, float]:
    return {"mean_response_s": jct, "p95_response_s": 2 * jct, "rho_max": rho, "rho_above_1": 0.5, "utilisation": 0.8,
            "sharing_loss": -0.1, **more}


def _changes(e: Estimate) -> dict[tuple[str, str], dict[str, Estimate]]:
    return {("Abacus over H-LTRF", "H-LTRF + equal share"): {"fb2009": e}}


def _printed_verdict(clause: str) -> str:
    """The verdict a reader reaches from the printed change and half-width ("-0.62 % ± 0.58")."""
    m = re.search(r"([+-][\d,.]+) % ± ([\d,.]+)", clause)
    assert m, clause
    mean, half = float(m[1].replace(",", "")), float(m[2].replace(",", ""))
    return "faster" if mean + half < 0 else "slower" if mean - half > 0 else "no difference at 95 %"


def test_tied_configurations_take_a_plural_verb_and_one_takes_a_singular() -> None:
    assert report._verb(["LTRF"], "has", "have") == "has"
    assert report._verb(["LTRF", "H-LTRF"], "has", "have") == "have"
    # a name with a comma or with "and" in it is still one configuration
    assert report._verb(["Tiresias, three limits"], "slows", "slow") == "slows"


def test_a_tie_of_two_winners_reads_have_in_the_paragraph() -> None:
    # LTRF and H-LTRF equally fast on every window, DRF slower: "LTRF and H-LTRF have the lowest mean job completion time"
    rows = _rows({"H-LTRF": [_metrics(100, 2), _metrics(120, 3)], "LTRF": [_metrics(100, 2), _metrics(120, 3)],
                  "DRF": [_metrics(300, 9), _metrics(320, 8)]})
    text = report.build(rows, ["H-LTRF", "LTRF", "DRF"])["summary"]
    assert "H-LTRF and LTRF have the lowest mean job completion time" in text, text
    assert " has the lowest" not in text and "configurations win both" in text
    assert not GLITCHES.search(text), GLITCHES.search(text)


def test_a_name_with_a_comma_keeps_its_own_mechanism_and_is_not_split_in_a_list() -> None:
    # "Tiresias, three limits" is one configuration: its mechanism is its own, not Tiresias'
    how = report._how(["Tiresias, three limits"])
    assert how == f"Tiresias, three limits {report.MECHANISM['Tiresias, three limits']}"
    assert report.MECHANISM["Tiresias"] not in how
    listed = report._names(["DRF", "Tiresias, three limits", "Karma"])
    assert listed.split("; ") == ["DRF", "Tiresias, three limits and Karma"]
    assert report._names(["DRF", "Karma", "Slurm"]) == "DRF, Karma and Slurm"


@pytest.mark.parametrize("n", [1, 2, 10])
def test_counts_agree_with_their_nouns(n: int) -> None:
    # with one window the paragraph and the tables said "1 windows"
    rows = _rows({"H-LTRF": [_metrics(100 + k, 2) for k in range(n)], "DRF": [_metrics(200 + k, 3) for k in range(n)]})
    out = report.build(rows, ["H-LTRF", "DRF"])
    titles = " ".join(t["title"] for t in out["tables"])
    word = "window" if n == 1 else "windows"
    assert f"({n} {word}," in out["summary"] and f"over {n} {word} " in titles
    assert not GLITCHES.search(out["summary"] + titles), GLITCHES.search(out["summary"] + titles)
    if n == 1:  # no interval from one window: no "± nan"
        assert "nan" not in out["summary"]


def test_a_large_ratio_and_a_wide_interval_print_in_plain_numbers() -> None:
    # the fastest configuration's max rho 100+ times the fairest's; a control whose interval is over 100 %
    rows = _rows({"H-LTRF": [_metrics(100, 2), _metrics(110, 3)], "SRPT (exact sizes)": [_metrics(50, 900), _metrics(55, 700)],
                  "DRF": [_metrics(400, 2.5), _metrics(500, 2.6)]})
    text = report.build(rows, ["H-LTRF", "SRPT (exact sizes)", "DRF"])["summary"]
    assert "320 times that of H-LTRF" in text and not GLITCHES.search(text), text
    clause = report._control("what", "a", "b", Estimate(310.0, 123.4, 5))
    assert "± 120 (slower)" in clause and "e+" not in clause


@pytest.mark.parametrize(("mean", "half"), [(-0.62, 0.58), (-0.55, 0.58), (-60.04, 6.7), (80.2, 22.0), (0.041, 0.012),
                                             (-0.0041, 0.0012), (3.4, 4.3), (310.0, 123.4)])
def test_a_change_prints_to_its_intervals_precision_so_the_printed_sum_agrees_with_the_verdict(mean: float, half: float) -> None:
    # "-0.6 % ± 0.58 (no difference)" read as faster; "+0.0 % (slower)" read as no change
    e = Estimate(mean, half, 10)
    clause = report._control("what", "a", "b", e)
    assert _printed_verdict(clause) == report._verdict(e), clause
    assert not GLITCHES.search(clause), clause


def test_a_significant_change_is_never_listed_as_zero() -> None:
    # "slower: ERA (+0 %)": every configuration listed faster or slower shows a non-zero change
    pair = {"ERA reservations over H-LTRF": Estimate(0.004, 0.001, 10), "DRF": Estimate(-0.03, 0.02, 10),
            "Karma": Estimate(0.001, 0.5, 10)}
    slower, faster = report._significant(pair, below=False), report._significant(pair, below=True)
    assert [s.split(" (")[0] for s in slower] == ["ERA reservations over H-LTRF"] and [s.split(" (")[0] for s in faster] == ["DRF"]
    for listed in slower + faster:
        change = float(re.search(r"\(([+-][\d.]+) %\)", listed)[1])  # type: ignore[index]
        assert change != 0, listed


def test_identical_windows_and_one_window_say_so() -> None:
    assert report._control("w", "a", "b", Estimate(0.0, 0.0, 10)).endswith("identical on every window")
    one = report._control("w", "a", "b", Estimate(2.5, float("nan"), 1))
    assert "nan" not in one and "one window" in one


def test_the_document_heading_agrees_with_one_window() -> None:
    rows = _rows({"H-LTRF": [_metrics(100, 2)], "DRF": [_metrics(200, 3)]})
    result = report.build(rows, ["H-LTRF", "DRF"])
    page = document.markdown(result, size="quick", wall="1 min", command="c")
    assert "1 window per trace" in page and "2 configurations" in page
    assert not GLITCHES.search(page), GLITCHES.search(page)


def test_a_tail_price_that_rounds_to_one_is_not_called_a_price() -> None:
    # the quick run printed "its max rho is 1 times SRPT (exact sizes)'s": the fastest paid nothing in the tail
    rows = _rows({"H-LTRF": [_metrics(100, 1780), _metrics(110, 1790)],
                  "ERA reservations over H-LTRF": [_metrics(50, 1775), _metrics(55, 1781)],
                  "SRPT (exact sizes)": [_metrics(52, 1770), _metrics(56, 1770)]})
    text = report.build(rows, list({r["policy"]: 0 for r in rows}))["summary"]
    assert "have about the same max rho (1,780 against 1,770)" in text and "pays in the tail" not in text, text
    assert not GLITCHES.search(text), GLITCHES.search(text)
