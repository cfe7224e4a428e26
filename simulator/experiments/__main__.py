"""Run a registered experiment from the command line and print its result as JSON.

Usage: ``python -m simulator.experiments NAME [key=value ...]`` (values are JSON,
e.g. ``hours=0.25 policies='["fifo","hltrf"]'``); ``--list`` lists the experiments,
``--help`` prints the usage.
"""

from __future__ import annotations

import argparse
import json
import sys

from simulator.experiments import load_all, run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simulator.experiments",
        description="Run a registered experiment and print its result (figures, tables, summary) as JSON.",
        epilog="Example: python -m simulator.experiments paper003_der hours=0.25",
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


def main(argv: list[str]) -> int:
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

    def progress(fraction: float, message: str) -> None:
        sys.stderr.write(f"{100 * fraction:5.1f} %  {message}\n")

    try:
        result = run(args.name, params, progress)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    sys.stdout.write(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
