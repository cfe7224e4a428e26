"""`make run` stops cleanly on Ctrl-C (its recipe's trap must not re-enter itself)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run_trap() -> str:
    """The `trap '...' SIGNALS` of the `run` recipe, as the recipe's shell sees it (make's $$ is $)."""
    recipe = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    match = re.search(r"trap '([^']*)' ([A-Z ]+);", recipe)
    assert match, "the run recipe has no trap"
    return f"trap '{match.group(1).replace('$$', '$')}' {match.group(2)}"


def test_ctrl_c_stops_the_run_recipe_without_a_crash():
    # as the recipe does: each background process's id is kept in pids for the trap to stop
    script = f'pids=""; {_run_trap()}; sleep 60 & pids="$pids $!"; sleep 61 & pids="$pids $!"; wait'
    # as from a terminal: SIGINT at its default (a shell started in the background by a
    # non-interactive shell, as a CI script may start the tests, inherits it ignored, and bash
    # cannot trap a signal ignored on entry)
    proc = subprocess.Popen(["bash", "-c", script], start_new_session=True, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    started = time.monotonic() + 20  # Ctrl-C while the recipe's processes run: wait until both are there
    while time.monotonic() < started:
        if len(subprocess.run(["pgrep", "-g", str(proc.pid), "sleep"], capture_output=True).stdout.split()) == 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground process group
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != -signal.SIGSEGV and proc.returncode != 139, err
    assert "Segmentation fault" not in err
    deadline = time.monotonic() + 10  # the children got TERM; on a busy machine they take a moment to go
    while subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).stdout and time.monotonic() < deadline:
        time.sleep(0.1)
    assert subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).stdout == b""  # the children are gone


def test_ctrl_c_under_make_leaves_make_silent(tmp_path):
    # given the run recipe's trap in a recipe that starts a background process and waits in the foreground
    trap = _run_trap().replace("$", "$$")
    recipe = f'pids=""; {trap}; sleep 60 & pids="$$pids $$!"; sleep 61; echo after; sleep 62 & pids="$$pids $$!"; wait'
    (tmp_path / "Makefile").write_text(f"run:\n\t@{recipe}\n")
    proc = subprocess.Popen(["make", "-C", str(tmp_path), "run"], start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    started = time.monotonic() + 20
    while time.monotonic() < started:
        if len(subprocess.run(["pgrep", "-g", str(proc.pid), "sleep"], capture_output=True).stdout.split()) == 2:
            break
        time.sleep(0.05)
    # when Ctrl-C reaches the foreground process group (make, the recipe's shell and its children)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # then make reports no error ("No child processes", "Terminated") and the background process is gone
    assert "make: ***" not in out, out
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).stdout and time.monotonic() < deadline:
        time.sleep(0.1)
    assert subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).stdout == b""
