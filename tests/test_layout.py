"""The layout holds what ``lint-imports`` cannot check (README "Layout"; the arrows of the table are
import-linter contracts in ``pyproject.toml``): no part reaches into another's internals (private
names, non-public layers), Django glue alone at the top of ``marketplace/``, no module named by a
part-and-layer compound, and the core names no part's model in a string either (a model reference
such as ``"marketplace.CuraJob"`` is an import that no import statement shows).

Every import statement counts: module level, inside functions, and under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CORE = {"infra", "market", "ledger"}
CONVENTIONS = {"web", "api"}  # what every page / every endpoint shares
MECHANISMS = {"auction", "reservations", "fairshare", "deadlines", "pools", "lab", "dashboard", "slurm"}
PARTS = CORE | CONVENTIONS | MECHANISMS

# what one mechanism part may import of another: its public layers
PUBLIC_LAYERS = {"services", "selectors", "serializers", "models"}
GLUE = {"__init__", "settings", "urls", "celery", "wsgi", "asgi", "apps", "admin", "models"}
GLUE_PACKAGES = {"management", "migrations", "templatetags"}  # Django finds these in the app package

PART_WORDS = {"abacus", "era", "cura", "deadline", "deadlines", "fairshare", "ltrf", "reservation", "reservations", "pool",
              "pools", "lab", "auction", "simulation", "simulations", "ledger", "whatif", "bid", "bids", "experiment"}
LAYER_WORDS = {"views", "selectors", "services", "charts", "forms", "api", "adapters", "models", "pages", "urls"}


def _modules(package: str) -> dict[str, Path]:
    out = {}
    for path in (ROOT / package).rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "migrations" in parts:
            continue
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(path: Path, module: str) -> list[tuple[str, str | None]]:
    """(imported module, imported name or None) for every import statement in the file."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module}: a relative import (the project imports absolutely)"
            out += [(node.module or "", a.name) for a in node.names]
    return out


def _part(module: str) -> str | None:
    bits = module.split(".")
    if bits[0] != "marketplace":
        return None
    return bits[1] if len(bits) > 1 and bits[1] in PARTS else "glue"


def _target(imported: str, name: str | None, modules: dict[str, Path]) -> str:
    """The module an import reaches: ``from marketplace.auction import services`` reaches auction.services."""
    if name is not None and f"{imported}.{name}" in modules:
        return f"{imported}.{name}"
    return imported


MARKETPLACE = _modules("marketplace")


def _violations() -> list[str]:
    bad = []
    for module, path in sorted(MARKETPLACE.items()):
        source = _part(module)
        if source == "glue":
            continue  # settings, urls, admin, apps, commands: glue composes the parts
        for imported, name in _imports(path, module):
            target = _target(imported, name, MARKETPLACE)
            dest = _part(target)
            if dest in (None, "glue", source):
                continue
            where = f"{module} imports {target}" + (f".{name}" if name and target == imported else "")
            if name and name.startswith("_") and target == imported:
                bad.append(f"{where}: a private name of another part")
            layer = target.split(".")[2] if len(target.split(".")) > 2 else None
            if source in MECHANISMS and dest in MECHANISMS and layer not in PUBLIC_LAYERS:
                bad.append(f"{where}: another mechanism's {layer or 'package'} (only {sorted(PUBLIC_LAYERS)} are public)")
    return bad


def test_no_part_reaches_into_another() -> None:
    assert _violations() == []


def test_the_checker_sees_every_import_statement(tmp_path: Path) -> None:
    # an import from a function and one for types only are both seen
    path = tmp_path / "clearing.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from marketplace.pools import services\n"
                    "def f():\n    from marketplace.auction.views import _x\n")
    found = _imports(path, "marketplace.market.services.clearing")
    assert ("marketplace.pools", "services") in found and ("marketplace.auction.views", "_x") in found


def part_model_names(root: Path = ROOT) -> set[str]:
    """The models of the mechanism parts: the classes at the top of each ``marketplace/<part>/models.py``."""
    names: set[str] = set()
    for part in MECHANISMS:
        path = root / "marketplace" / part / "models.py"
        if path.exists():
            names |= {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.ClassDef)}
    return names


def strings_naming(names: set[str], path: Path) -> list[str]:
    """Each string literal of ``path`` (docstrings included) that names one of ``names`` as a word."""
    word = re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")
    return [f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}: {found}"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            for found in word.findall(node.value)]


def test_no_string_of_the_core_names_a_parts_model() -> None:
    names = part_model_names()
    # derived from the parts' models modules: Cura's jobs, ERA's reservations, the deadline bookings ...
    assert {"CuraJob", "Reservation", "DeadlineBooking", "VMPool", "ExperimentRun"} <= names
    assert not names & {"Job", "Market", "Tenant", "LedgerEntry"}  # the core's own stay out
    bad = [hit for module, path in sorted(MARKETPLACE.items()) if _part(module) in CORE for hit in strings_naming(names, path)]
    assert bad == []


def test_the_string_check_sees_a_model_reference(tmp_path: Path) -> None:
    path = tmp_path / "models.py"
    path.write_text('from django.db import models\nclass E(models.Model):\n'
                    '    link = models.ForeignKey("marketplace.CuraJob", on_delete=models.PROTECT)\n')
    assert strings_naming({"CuraJob", "Reservation"}, path) == [f"{path}:3: CuraJob"]


def test_the_top_of_marketplace_is_django_glue_only() -> None:
    top = sorted(p.stem for p in (ROOT / "marketplace").glob("*.py"))
    assert set(top) <= GLUE and len(top) <= 12, top
    packages = {p.name for p in (ROOT / "marketplace").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= PARTS | GLUE_PACKAGES, packages - PARTS - GLUE_PACKAGES


@pytest.mark.parametrize("package", ["marketplace", "scheduler", "simulator"])
def test_no_module_is_named_by_a_part_and_layer_compound(package: str) -> None:
    # the part's package says the part: reservations/views.py, never views_reservations.py or abacus_steps.py
    bad = []
    for path in (ROOT / package).rglob("*.py"):
        words = set(path.stem.split("_"))
        if "migrations" not in path.parts and len(words) > 1 and words & (PART_WORDS | LAYER_WORDS):
            bad.append(str(path.relative_to(ROOT)))
    assert bad == []
