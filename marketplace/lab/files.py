"""The simulation lab's result files, written the same way by the pages and ``manage.py simulate``.

- ``summary.csv``: configuration, metric, mean, 95 % half-width, seeds (one row each).
- ``study.json``: the study's settings, its summary table and per run its label,
  status, params, metrics, series and prices.
- ``run-<id>-jobs.csv``: one run's per-job records (simulated s since the first arrival).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from simulator.whatif.run import JOB_COLUMNS

SUMMARY_HEADER = ["configuration", "metric", "mean", "ci95_half_width", "seeds"]


def summary_rows(summary: Mapping[str, Any]) -> Iterable[list[Any]]:
    """Header, then one row per configuration and metric of a gathered table."""
    yield SUMMARY_HEADER
    # in the table's own order (``rows`` and ``columns`` are lists): a JSON object read back
    # from PostgreSQL's jsonb does not keep its keys in the order they were written
    labels = [row[0] for row in summary.get("rows", [])] or list(summary["estimates"])
    titles = list(summary.get("columns", [])[2:])
    for label in labels:
        metrics = summary["estimates"][label]
        for metric in [t for t in titles if t in metrics] + [t for t in metrics if t not in titles]:
            mean, half, n = metrics[metric]
            yield [label, metric, mean, half, n]


def summary_by_metric(summary: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The study's summary table turned on its side for the page: one row per metric, one column
    per configuration (``{"header": ["metric", *labels], "rows": [[metric, *cells]]}``). A study
    compares a few configurations over some twenty metrics, so this way every column fits the
    page's width; the CSV keeps one row per configuration and metric (:func:`summary_rows`)."""
    columns, rows = list(summary.get("columns", [])), [list(r) for r in summary.get("rows", [])]
    if not columns or not rows:
        return {"header": [], "rows": []}
    header = ["metric", *(str(r[0]) for r in rows)]
    return {"header": header, "rows": [[columns[k], *(r[k] for r in rows)] for k in range(1, len(columns))]}


def jobs_rows(cols: Mapping[str, list[Any]]) -> Iterable[list[Any]]:
    """Header, then one row per job of a run's columnar records (columns in
    ``simulator.whatif.run.JOB_COLUMNS`` order, whatever order the stored JSON kept)."""
    names = [c for c in JOB_COLUMNS if c in cols] + [c for c in cols if c not in JOB_COLUMNS]
    yield names
    yield from (list(row) for row in zip(*(cols[c] for c in names), strict=True))


def study_document(study: Mapping[str, Any], summary: Any, runs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"study", "summary", "runs"}``; each run ``{"id", "label", "status", "params", "metrics", "series", "prices"}``."""
    out = []
    for r in runs:
        result = r.get("result") or {}
        out.append({"id": r["id"], "label": r["label"], "status": r["status"], "params": r["params"],
                    **{k: result.get(k) for k in ("metrics", "series", "prices") if result}})  # fmt: skip
    return {"study": dict(study), "summary": summary, "runs": out}


def public_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as pages and downloads show them: a trace as its file name, never a server path."""
    out = dict(params)
    if out.get("trace"):
        out["trace"] = Path(str(out["trace"])).name
    return out


def server_roots() -> list[str]:
    """The folders whose paths a page or download must not show: the project's, the upload folder and
    the folders shared traces are found in (resolved, so a symlinked path is caught too)."""
    from django.conf import settings

    from simulator.experiments.ltrf.traces import SEARCH

    folders = [Path(settings.BASE_DIR), Path(settings.SIMULATION_UPLOAD_DIR), *SEARCH]
    return sorted({str(p) for f in folders for p in (f, f.resolve())})


def public_result(value: Any, roots: Iterable[str]) -> Any:
    """``value`` (a run's stored result: dicts, lists, strings, numbers) with every server path under one of
    ``roots`` (the project, the upload folder, the shared traces) replaced by its file name, wherever it
    stands: a parameter, a table cell, a sentence of the summary. A download never shows where files live."""
    pattern = re.compile("(?:" + "|".join(re.escape(r.rstrip("/")) for r in sorted(roots, key=len, reverse=True) if r) + r")/[^\s\"',;)]*")

    def scrub(v: Any) -> Any:
        if isinstance(v, str):
            return pattern.sub(lambda m: Path(m.group(0)).name, v)
        if isinstance(v, dict):
            return {k: scrub(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [scrub(x) for x in v]
        return v

    return scrub(value)


def write_csv(path: Any, rows: Iterable[list[Any]]) -> None:
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
