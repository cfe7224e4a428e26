"""Run a registered experiment from the command line and print its result as JSON, or write the fidelity report.

Usage:
    python -m simulator.experiments NAME [key=value ...]   run one experiment; values are JSON,
                                                            e.g. hours=0.25 policies='["fifo","hltrf"]'
    python -m simulator.experiments --list                 list the experiments (name: title (source))
    python -m simulator.experiments report [--quick] [--out PATH]
                                                            run every paper experiment and write the fidelity
                                                            report (default docs/fidelity.md; --quick: CI sizes)
    python -m simulator.experiments --help                 this text
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from simulator.experiments import UnknownExperiment, load_all, run

DEFAULT_REPORT = Path("docs") / "fidelity.md"


def _progress(fraction: float, message: str) -> None:
    sys.stderr.write(f"{100 * fraction:5.1f} %  {message}\n")


def _report(args: list[str]) -> int:
    from simulator.experiments.report import write

    quick, out = False, DEFAULT_REPORT
    while args:
        arg = args.pop(0)
        if arg == "--quick":
            quick = True
        elif arg == "--out" and args:
            out = Path(args.pop(0))
        else:
            sys.stderr.write(f"report: unknown argument {arg!r}\n{__doc__}")
            return 2
    sections = write(out, quick=quick, progress=_progress)
    failed = [s.name for s in sections if s.error]
    sys.stdout.write(f"wrote {out} ({sum(len(s.headlines) for s in sections)} headline rows, {len(sections)} experiments)\n")
    if failed:
        sys.stderr.write(f"experiments that did not run: {', '.join(failed)}\n")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"--help", "-h", "help"}:
        sys.stdout.write(__doc__ or "")
        return 0
    if argv[0] in {"--list", "-l"}:
        for name, exp in sorted(load_all().items()):
            sys.stdout.write(f"{name}: {exp.title} ({exp.source})\n")
        return 0
    if argv[0] == "report":
        return _report(list(argv[1:]))
    params = {}
    for arg in argv[1:]:
        key, sep, raw = arg.partition("=")
        if not sep:
            sys.stderr.write(f"{arg!r}: parameters are key=value\n{__doc__}")
            return 2
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
    try:
        result = run(argv[0], params, _progress)
    except (UnknownExperiment, ValueError, TypeError) as error:
        message = error.args[0] if isinstance(error, UnknownExperiment) and error.args else error
        sys.stderr.write(f"error: {message}\n")
        return 2
    sys.stdout.write(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
