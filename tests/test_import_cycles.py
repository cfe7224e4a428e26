"""No import circle in ``scheduler/``, ``simulator/`` or ``marketplace/`` (its parts, as packages and as modules): a reader
follows the imports one way.

Every import statement counts -- at module level, inside a function, or under
``if TYPE_CHECKING:`` (a type-only import back is still a circle to whoever reads
the code) -- and so does a module's own package, whose ``__init__`` Python runs
first: a package whose ``__init__`` imports a module that imports the package back
is a circle too. Only ``importlib`` calls are not statements and are not seen (the
experiments' registry loads its modules that way, after its own import).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("scheduler", "simulator")


def module_files(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file; a package goes by its own name (its ``__init__.py``)."""
    files: dict[str, Path] = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _known_prefix(name: str, known: set[str]) -> str | None:
    """The longest prefix of ``name`` that is a known module (``pkg.mod.Class`` -> ``pkg.mod``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The known modules that ``path``'s import statements name, wherever they stand in it."""
    is_package = path.name == "__init__.py"
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per extra dot
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            # ``from pkg import mod`` imports the module pkg.mod; ``from mod import name`` the module mod
            names += [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    found = {_known_prefix(name, known) for name in names}
    return {name for name in found if name is not None}


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports, its own package included (Python runs the package first)."""
    known = set(files)
    graph = {module: imported(module, path, known) for module, path in files.items()}
    for module in graph:
        parent = module.rpartition(".")[0]
        if parent in known:
            graph[module].add(parent)
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Modules reachable from ``start`` by one import or more (``start`` only through a circle)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components that are circles: more than one module, or one that imports itself.

    Few enough modules that the reachability of each one is cheap and plainer than Tarjan's algorithm.
    """
    reach = {module: _reachable(graph, module) for module in graph}
    groups = {frozenset(n for n in reach[m] if m in reach[n]) for m in graph if m in reach[m]}
    return sorted(sorted(group) for group in groups)


def a_circle(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """One shortest circle through the first module of ``group`` (for the failure message)."""
    start = group[0]
    paths, queue = {start: [start]}, [start]
    while queue:
        module = queue.pop(0)
        for nxt in sorted(graph[module] & set(group)):
            if nxt == start:
                return [*paths[module], start]
            if nxt not in paths:
                paths[nxt] = [*paths[module], nxt]
                queue.append(nxt)
    raise AssertionError(f"{group} is not a circle")


CASES = {
    "no circle": ({"a": "import pkg.b\n", "b": ""}, []),
    "a type-only import back": (
        {"a": "from pkg import b\n", "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n"},
        [["pkg.a", "pkg.b"]],
    ),
    "an import inside a function": ({"a": "import pkg.b\n", "b": "def f():\n    from pkg import a\n"}, [["pkg.a", "pkg.b"]]),
    "a relative import": ({"a": "from . import b\n", "b": "from .a import A\n"}, [["pkg.a", "pkg.b"]]),
    "a package and its module": ({"__init__": "from pkg.a import A\n", "a": ""}, [["pkg", "pkg.a"]]),
    "a module importing itself": ({"a": "import pkg.a\n", "b": ""}, [["pkg.a"]]),
    "importlib is not a statement": ({"__init__": "import importlib\nimportlib.import_module('pkg.a')\n", "a": "from pkg import x\n"}, []),
}


@pytest.mark.parametrize(("sources", "expected"), CASES.values(), ids=CASES.keys())
def test_the_walk_finds_every_kind_of_circle(tmp_path: Path, sources: dict[str, str], expected: list[list[str]]) -> None:
    (tmp_path / "pkg").mkdir()
    for name, source in {"__init__": "", **sources}.items():
        (tmp_path / "pkg" / f"{name}.py").write_text(source)
    assert cycles(import_graph(module_files(tmp_path, ("pkg",)))) == expected


def test_scheduler_and_simulator_have_no_import_circle() -> None:
    graph = import_graph(module_files(ROOT, PACKAGES))
    # the walk covers the tree, type-only imports included
    assert {"scheduler.plan", "simulator.cluster.model", "simulator.cluster.stages"} <= set(graph)
    found = cycles(graph)
    assert not found, "import circles:\n" + "\n".join(
        f"  {{{', '.join(group)}}}: {' -> '.join(a_circle(graph, group))}" for group in found
    )


# marketplace/: Django glue (``marketplace/*.py``, ``management``, ``migrations``, ``templatetags``) composes
# the parts and is left out; the parts are every other package.
GLUE_PACKAGES = {"management", "migrations", "templatetags"}
# lab/services/experiments.py and simulations.py import each other: another branch (one lab/services/runs.py)
# removes that circle; until it lands it is the one circle allowed.
KNOWN_CIRCLES = [["marketplace.lab.services.experiments", "marketplace.lab.services.simulations"]]


def marketplace_parts(root: Path) -> list[str]:
    """The parts of ``marketplace/``: its packages but the Django glue's."""
    return sorted(p.name for p in (root / "marketplace").iterdir()
                  if (p / "__init__.py").exists() and p.name not in GLUE_PACKAGES)


def marketplace_graph(root: Path) -> dict[str, set[str]]:
    """The import graph of the parts' modules (the glue left out, and what they import of it)."""
    parts = tuple(f"marketplace/{part}" for part in marketplace_parts(root))
    files = {m.replace("/", "."): p for m, p in module_files(root, parts).items()}
    graph = import_graph(files)
    return {m: {n for n in names if n in graph} for m, names in graph.items()}


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded to the parts: ``marketplace.market`` imports ``marketplace.ledger`` if
    one of its modules imports one of the ledger's (a part's imports of itself do not count)."""
    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    out: dict[str, set[str]] = {part(m): set() for m in graph}
    for module, names in graph.items():
        out[part(module)] |= {part(n) for n in names} - {part(module)}
    return out


def _report(graph: dict[str, set[str]], found: list[list[str]]) -> str:
    return "import circles:\n" + "\n".join(f"  {{{', '.join(g)}}}: {' -> '.join(a_circle(graph, g))}" for g in found)


def test_marketplaces_parts_import_each_other_one_way_only() -> None:
    graph = package_graph(marketplace_graph(ROOT))
    # the walk covers every part, and sees the core import the ledger (the one way)
    assert {"marketplace.market", "marketplace.ledger", "marketplace.infra", "marketplace.pools"} <= set(graph)
    assert "marketplace.ledger" in graph["marketplace.market"]
    found = cycles(graph)
    assert not found, _report(graph, found)


def test_marketplaces_modules_have_no_import_circle_but_the_known_one() -> None:
    graph = marketplace_graph(ROOT)
    assert {"marketplace.market.services.clock", "marketplace.ledger.services", "marketplace.infra.rows"} <= set(graph)
    found = [group for group in cycles(graph) if group not in KNOWN_CIRCLES]
    assert not found, _report(graph, found)


def test_the_package_fold_sees_a_circle_between_parts(tmp_path: Path) -> None:
    # given two parts whose modules import each other's, through different modules
    for part in ("core", "ledger"):
        (tmp_path / "marketplace" / part).mkdir(parents=True)
        (tmp_path / "marketplace" / part / "__init__.py").write_text("")
    (tmp_path / "marketplace" / "core" / "selectors.py").write_text("from marketplace.ledger import services\n")
    (tmp_path / "marketplace" / "ledger" / "services.py").write_text("")
    (tmp_path / "marketplace" / "core" / "services.py").write_text("")
    (tmp_path / "marketplace" / "ledger" / "selectors.py").write_text("def f():\n    from marketplace.core import services\n")
    # then no module circle, but a circle of the two packages
    graph = marketplace_graph(tmp_path)
    assert cycles(graph) == []
    assert cycles(package_graph(graph)) == [["marketplace.core", "marketplace.ledger"]]
