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
    script = f"{_run_trap()}; sleep 60 & sleep 61 & wait"
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
