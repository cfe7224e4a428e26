"""``manage.py simulate``: a simulation-lab study without the web, for scripts and CI.

The same validation (``lab.services.simulations.simulation_plan``), the same pure run
(the registered ``simulation`` experiment) and the same result files as the pages
(``marketplace.lab.files``): ``summary.csv``, ``study.json`` and one
``run-<n>-jobs.csv`` per run, under ``--out``. Runs go one after the other in
this process, with a progress bar on the terminal; nothing is written to the
database.

Example (alpha over three values x three seeds on FB-2009 hours 0-2):

    python manage.py simulate --hours 2 --capacity 20 10 --vary alpha --values 0.2 0.5 0.8 --seeds 0 1 2 --out var/sim-alpha
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from marketplace.lab.files import jobs_rows, study_document, summary_rows, write_csv
from marketplace.lab.forms import SHARED_TRACES
from marketplace.lab.services.simulations import SWEEPABLE, simulation_plan, study_type_names
from simulator import experiments
from simulator.experiments.simulation import specs
from simulator.whatif.compare import summary_table
from simulator.whatif.run import FB2009, PREDICTORS
from simulator.workloads.synthetic import GENERATOR_DEFAULTS, GENERATOR_PARAMETERS, GENERATORS


def _value(vary: str, text: str) -> Any:
    return float(text) if vary in ("alpha", "t_wait") else text


class Command(BaseCommand):
    help = "Run a simulation-lab study (configurations x seeds on a trace) without the web; write its result files."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--trace", default="fb2009", help="fb2009, a file name in ../shared/traces (beside the repository), or a path")
        parser.add_argument("--format", default="auto", choices=["auto", "swim", "swf"])
        parser.add_argument("--start-hour", type=float, default=0.0)
        parser.add_argument("--hours", type=float, default=2.0)
        parser.add_argument("--time-scale", type=float, default=1.0)
        parser.add_argument("--tenants", type=int, default=8)
        parser.add_argument("--groups", type=int, default=2)
        parser.add_argument("--max-jobs", type=int, default=0)
        parser.add_argument("--generator", default="", choices=["", *GENERATORS], help="a synthetic workload instead of the trace")
        for p in GENERATOR_PARAMETERS:
            parser.add_argument(f"--{p.name.replace('_', '-')}", type=float, default=p.default, help=p.help)
        parser.add_argument("--capacity", type=int, nargs="+", default=[100, 50])
        parser.add_argument("--vm-pools", default="", help="the cluster as VM pools, e.g. 'c2:10, c8:4' (overrides --capacity)")
        parser.add_argument("--predictor", default="exact", choices=list(PREDICTORS))
        parser.add_argument("--mechanism", default="abacus")
        parser.add_argument("--fairshare", default="hltrf")
        parser.add_argument("--dispatch", default="stride")
        parser.add_argument("--alpha", type=float, default=0.5)
        parser.add_argument("--t-wait", type=float, default=30.0)
        parser.add_argument("--vary", default="", choices=["", *SWEEPABLE])
        parser.add_argument("--values", nargs="*", default=[])
        parser.add_argument("--seeds", type=int, nargs="+", default=[0])
        parser.add_argument("--out", default="var/simulate", help="directory for summary.csv, study.json, run-*-jobs.csv")

    def handle(self, *args: Any, **o: Any) -> None:
        trace = str(FB2009) if o["trace"] == "fb2009" else o["trace"]
        if not Path(trace).exists() and (SHARED_TRACES / trace).exists():
            trace = str(SHARED_TRACES / trace)
        workload = {"trace": trace, "trace_format": o["format"], "start_hour": o["start_hour"], "hours": o["hours"],
                    "time_scale": o["time_scale"], "tenants": o["tenants"], "groups": o["groups"], "max_jobs": o["max_jobs"],
                    "workload_seed": 0}  # fmt: skip
        workload.update({k: o[k] for k in ("generator", *GENERATOR_DEFAULTS)})
        base = {key: o[key] for key in ("mechanism", "fairshare", "dispatch", "alpha", "t_wait", "predictor")}
        values = [_value(o["vary"], v) for v in o["values"]]
        try:
            plan = simulation_plan(workload=workload, capacity=o["capacity"], base=base, vary=o["vary"], values=values, seeds=o["seeds"],
                                   vm_pools=o["vm_pools"])  # fmt: skip
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        out = Path(o["out"])
        out.mkdir(parents=True, exist_ok=True)
        runs: list[dict[str, Any]] = []
        for n, (label, params) in enumerate(plan, start=1):
            began = time.monotonic()
            result = experiments.run("simulation", params, self._bar(n, len(plan), f"{label} seed {params['seed']}"))
            self._write_line(f"run {n}/{len(plan)} {label} seed {params['seed']}: done in {time.monotonic() - began:.1f} s wall\n")
            write_csv(out / f"run-{n}-jobs.csv", jobs_rows(result["jobs"]))
            runs.append({"id": n, "label": label, "status": "done", "params": params, "result": result})
        summary = summary_table([(r["label"], int(r["params"]["seed"]), r["result"]["metrics"]) for r in runs],
                                type_names=study_type_names(runs[0]["params"]) if runs else ())
        summary["failed"] = []
        write_csv(out / "summary.csv", summary_rows(summary))
        if o["vm_pools"]:
            workload["vm_pools"] = o["vm_pools"]
        settings_ = {"id": None, "title": "manage.py simulate", "workload": workload, "capacity": specs(plan[0][1])[1], "base": base,
                     "vary": o["vary"], "live": None}  # fmt: skip
        (out / "study.json").write_text(json.dumps(study_document(settings_, summary, runs), indent=1))
        width = max(len(str(c)) for row in summary["rows"] for c in row[:1]) + 2
        self.stdout.write(" | ".join(summary["columns"]))
        for row in summary["rows"]:
            self.stdout.write(f"{row[0]:<{width}}| " + " | ".join(str(c) for c in row[1:]))
        self.stdout.write(self.style.SUCCESS(f"wrote {out}/summary.csv, study.json and {len(runs)} run-*-jobs.csv"))

    def _write_line(self, text: str) -> None:
        self.stdout.write(text, ending="")
        self.stdout.flush()

    def _bar(self, n: int, total: int, label: str) -> experiments.Progress:
        last = [0.0]
        tty = sys.stdout.isatty()

        def progress(fraction: float, message: str) -> None:
            now = time.monotonic()
            if now - last[0] < (0.2 if tty else 5.0):
                return
            last[0] = now
            filled = int(30 * fraction)
            line = f"run {n}/{total} {label} [{'#' * filled}{'.' * (30 - filled)}] {100 * fraction:3.0f}% {message}"
            self._write_line(("\r" + line[:150]) if tty else line + "\n")

        return progress
