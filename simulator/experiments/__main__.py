"""Run a registered experiment from the command line and print its result as JSON.

Usage: ``python -m simulator.experiments NAME [key=value ...]`` (values are JSON,
e.g. ``hours=0.25 policies='["fifo","hltrf"]'``); ``--list`` lists the experiments.
"""

from __future__ import annotations

import json
import sys

from simulator.experiments import load_all, run


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"--list", "-l"}:
        for name, exp in sorted(load_all().items()):
            sys.stdout.write(f"{name}: {exp.title} ({exp.source})\n")
        return 0
    params = {}
    for arg in argv[1:]:
        key, _, raw = arg.partition("=")
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
    def progress(fraction: float, message: str) -> None:
        sys.stderr.write(f"{100 * fraction:5.1f} %  {message}\n")

    result = run(argv[0], params, progress)
    sys.stdout.write(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
