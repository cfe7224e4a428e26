"""Where the CPU went during a load run: CPU seconds per process group, from /proc (Linux).

    cpu_split.py snap FILE --root web=PID --root worker=PID ... [--db NAME]
    ... the load runs ...
    cpu_split.py diff FILE --root web=PID ... [--db NAME]

A group is a root process and all its descendants (gunicorn's master and its workers,
Celery's master and its pool); ``--db NAME`` adds the PostgreSQL backends of database NAME
(their command line reads ``postgres: user NAME ...``). Processes that exit between the two
snapshots are not counted (gunicorn recycles a worker only after thousands of requests).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _procs() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent pid, CPU seconds, command line)."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out[int(d.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, cmd)
    return out


def _groups(roots: dict[str, int], db: str | None) -> dict[str, dict[int, float]]:
    procs = _procs()
    by_root = {pid: name for name, pid in roots.items()}
    groups: dict[str, dict[int, float]] = {name: {} for name in roots}
    if db:
        groups["postgres"] = {}
    for pid, (_, cpu, cmd) in procs.items():
        if db and cmd.startswith("postgres: ") and f" {db} " in cmd:
            groups["postgres"][pid] = cpu
            continue
        p, seen = pid, 0
        while p in procs and seen < 64:
            if p in by_root:
                groups[by_root[p]][pid] = cpu
                break
            p, seen = procs[p][0], seen + 1
    return groups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("action", choices=("snap", "diff"))
    ap.add_argument("file")
    ap.add_argument("--root", action="append", default=[], help="name=pid")
    ap.add_argument("--db")
    a = ap.parse_args()
    roots = {r.split("=", 1)[0]: int(r.split("=", 1)[1]) for r in a.root}
    now = _groups(roots, a.db)
    if a.action == "snap":
        Path(a.file).write_text(json.dumps({"groups": {k: {str(p): c for p, c in v.items()} for k, v in now.items()}}))
        return
    before = json.loads(Path(a.file).read_text())["groups"]
    print("CPU seconds during the run, per process group:")
    total = 0.0
    for name, pids in now.items():
        old = before.get(name, {})
        used = sum(cpu - old.get(str(pid), 0.0) for pid, cpu in pids.items())
        total += used
        print(f"  {name:<10} {used:8.1f} s")
    print(f"  {'total':<10} {total:8.1f} s")


if __name__ == "__main__":
    main()
