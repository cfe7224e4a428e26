"""Real Celery workers on the ``simulation`` queue for the lab benchmarks (bench_sim_sweep, bench_lab_sweep).

Each worker is ``celery -A marketplace worker -Q simulation --pool=prefork --concurrency=1``, as
compose's ``sim-worker`` runs it: with ``--disable-prefetch`` a worker takes a task only when its
process is free (a task is acknowledged when it starts, so a prefetching worker would reserve the
next one while another worker idles). Logs go to ``var/<name>-worker-<k>.log``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(n: int, name: str, *, prefetch: bool = False) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` worker processes (each its own session, so :func:`stop` can kill its children)."""
    procs = []
    (ROOT / "var").mkdir(exist_ok=True)
    for k in range(n):
        log = open(ROOT / "var" / f"{name}-worker-{k}.log", "w")  # noqa: SIM115
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "marketplace", "worker", "-Q", "simulation", "--pool=prefork", "--concurrency=1",
             "-O", "fair", "--without-gossip", "--without-mingle", "--loglevel=warning", "--hostname", f"{name}{k}-{os.getpid()}@%h",
             *([] if prefetch else ["--disable-prefetch"])],
            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        ))  # fmt: skip
    return procs


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """TERM every worker (a warm shutdown), then KILL the process group of any still there after 30 s."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
