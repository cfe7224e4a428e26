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

import argparse
import json
import sys
from pathlib import Path

from simulator.experiments import load_all, run

DEFAULT_REPORT = Path("docs") / "fidelity.md"
REPORT_USAGE = "python -m simulator.experiments report [--quick] [--out PATH]"


def _progress(fraction: float, message: str) -> None:
    sys.stderr.write(f"{100 * fraction:5.1f} %  {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simulator.experiments",
        description="Run a registered experiment and print its result (figures, tables, summary) as JSON.",
        epilog=(f"The fidelity report:\n  {REPORT_USAGE}\n  runs every paper experiment and writes {DEFAULT_REPORT} "
                "(--quick: CI sizes).\nExample: python -m simulator.experiments paper003_der hours=0.25"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--list", "-l", action="store_true", help="list the registered experiments and exit")
    parser.add_argument("name", nargs="?", help="the experiment's registry name (see --list)")
    parser.add_argument("params", nargs="*", metavar="key=value", help="parameters; values are JSON, else plain strings")
    return parser


def _params(parser: argparse.ArgumentParser, pairs: list[str]) -> dict[str, object]:
    params: dict[str, object] = {}
    for arg in pairs:
        key, sep, raw = arg.partition("=")
        if not sep or not key:
            parser.error(f"parameter {arg!r}: write key=value")
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
    return params


def _report(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulator.experiments report",
                                     description="Run every paper experiment and write the fidelity report.")
    parser.add_argument("--quick", action="store_true", help="CI sizes")
    parser.add_argument("--out", type=Path, default=DEFAULT_REPORT, help=f"where to write it (default {DEFAULT_REPORT})")
    options = parser.parse_args(args)
    from simulator.experiments.report import write

    sections = write(options.out, quick=options.quick, progress=_progress)
    failed = [s.name for s in sections if s.error]
    sys.stdout.write(f"wrote {options.out} ({sum(len(s.headlines) for s in sections)} headline rows, {len(sections)} experiments)\n")
    if failed:
        sys.stderr.write(f"experiments that did not run: {', '.join(failed)}\n")
    return 1 if failed else 0


def _main(argv: list[str]) -> int:
    if argv[:1] == ["report"]:
        return _report(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    registry = load_all()
    if args.list or args.name is None:
        for name, exp in sorted(registry.items()):
            sys.stdout.write(f"{name}: {exp.title} ({exp.source})\n")
        return 0
    if args.name not in registry:
        parser.error(f"unknown experiment {args.name!r}; one of: {', '.join(sorted(registry))}")
    params = _params(parser, args.params)
    try:
        result = run(args.name, params, _progress)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    sys.stdout.write(json.dumps(result, indent=1) + "\n")
    return 0


def main(argv: list[str]) -> int:
    """The command's exit status: 0 done, 1 a report with experiments that did not run, 2 a usage error."""
    try:
        return _main(argv)
    except SystemExit as exit_:  # argparse's --help (0) and usage errors (2)
        return int(exit_.code or 0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
