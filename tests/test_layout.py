"""The layout holds (README "Layout"): one package per part of the market, imports only
along the arrows the README's table allows, no part reaching into another's internals, Django
glue alone at the top of ``marketplace/``, and no module named by a part-and-layer compound.

Every import statement counts: module level, inside functions, and under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CORE = {"market", "ledger"}
CONVENTIONS = {"web", "api"}  # what every page / every endpoint shares
MECHANISMS = {"auction", "reservations", "fairshare", "deadlines", "pools", "lab", "dashboard"}
PARTS = CORE | CONVENTIONS | MECHANISMS

# part -> the parts it may import (the README's layout table, arrow for arrow)
ALLOWED: dict[str, set[str]] = {
    "market": {"ledger"},
    "ledger": {"market"},
    "web": CORE,
    "api": CORE | {"web"},
    "auction": CORE | CONVENTIONS | {"fairshare"},
    "fairshare": CORE | CONVENTIONS,
    "reservations": CORE | CONVENTIONS | {"auction"},
    "deadlines": CORE | CONVENTIONS | {"auction"},
    "pools": CORE | CONVENTIONS,
    "lab": CORE | CONVENTIONS,
    "dashboard": CORE | CONVENTIONS | {"auction", "fairshare"},
}
# what one mechanism part may import of another: its public layers
PUBLIC_LAYERS = {"services", "selectors", "serializers", "models"}
GLUE = {"__init__", "settings", "urls", "celery", "wsgi", "asgi", "apps", "admin", "models"}
GLUE_PACKAGES = {"management", "migrations", "templatetags"}  # Django finds these in the app package
IMPORTABLE_GLUE = {"marketplace.celery"}  # the Celery app: parts publish tasks through it

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
            if dest is None or dest == source:
                continue
            where = f"{module} imports {target}" + (f".{name}" if name and target == imported else "")
            if dest == "glue":
                if target not in IMPORTABLE_GLUE:
                    bad.append(f"{where}: a part imports Django glue")
                continue
            assert source is not None
            if dest not in ALLOWED[source]:
                bad.append(f"{where}: {source} -> {dest} is not an arrow of the README's table")
            if name and name.startswith("_") and target == imported:
                bad.append(f"{where}: a private name of another part")
            layer = target.split(".")[2] if len(target.split(".")) > 2 else None
            if source in MECHANISMS and dest in MECHANISMS and layer not in PUBLIC_LAYERS:
                bad.append(f"{where}: another mechanism's {layer or 'package'} (only {sorted(PUBLIC_LAYERS)} are public)")
    return bad


def test_every_import_follows_an_allowed_arrow_and_no_part_reaches_into_another() -> None:
    assert _violations() == []


def test_the_checker_sees_an_arrow_the_table_does_not_allow(tmp_path: Path) -> None:
    # an import of a mechanism from the core, at function level and for types only, is caught
    path = tmp_path / "clearing.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from marketplace.pools import services\n"
                    "def f():\n    from marketplace.auction.views import _x\n")
    found = _imports(path, "marketplace.market.services.clearing")
    assert ("marketplace.pools", "services") in found and ("marketplace.auction.views", "_x") in found
    assert "pools" not in ALLOWED["market"] and "auction" not in ALLOWED["market"]


def test_the_core_names_no_mechanism() -> None:
    for module, path in MARKETPLACE.items():
        if _part(module) in CORE:
            reached = {_part(_target(i, n, MARKETPLACE)) for i, n in _imports(path, module)}
            assert not reached & MECHANISMS, f"{module} imports {reached & MECHANISMS}"


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
