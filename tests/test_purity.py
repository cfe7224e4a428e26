"""``scheduler/`` and ``simulator/`` are pure (README "Layout"): no module of
either imports Django, Celery or ``marketplace``, directly or through another module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("django", "celery", "kombu", "rest_framework", "marketplace")
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for package in ("scheduler", "simulator")
    for path in (ROOT / package).rglob("*.py")
)


def test_every_module_is_covered() -> None:
    assert "scheduler.plan" in MODULES and "simulator.market.engine" in MODULES and "simulator.cluster.stages" in MODULES
    assert len(MODULES) >= 20


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_nothing_of_the_web_side(module: str) -> None:
    # statically: no import statement names a forbidden package ...
    path = ROOT / Path(*module.split(".")).with_suffix(".py")
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        assert not [n for n in names if n.split(".")[0] in FORBIDDEN], f"{module} imports {names}"
    # ... and at run time nothing pulls one in indirectly (a fresh interpreter)
    code = f"import sys, {module}; bad = [m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}]; assert not bad, bad"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, timeout=60)
