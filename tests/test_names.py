"""Names that are true: what the comments and docstrings name exists.

A dotted module reference in a comment or docstring of ``marketplace/``, ``scheduler/`` or
``simulator/`` (``services.clock``, ``market.rows``, ``simulator.cluster.model``, backticked or in
prose) must resolve, read statically (no import), to a module or to a name in one, relative to the
package of the file, to its parents, or to a top-level package. Three readings keep it from flagging
what is not a module reference:

* a reference whose first word is no module of the file's top-level package is prose
  (``model.objects`` in ``marketplace/`` names a variable, not ``simulator.cluster.model``);
* a reference that fails at a name some class of the project has as a member is a variable's
  attribute (``market.state_version``, ``cluster.now``), unless it starts with a layer's name
  (``services.cluster``): no variable is called ``services``;
* a reference whose first word is an installed package outside the project
  (``celery.contrib.django.task``) is checked by importing it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("marketplace", "scheduler", "simulator")
# Celery task names keep the ``marketplace.tasks.<name>`` prefix of their first home (the names queued
# messages and beat's schedule carry); they are names of tasks, not of a module.
TASK_NAME = re.compile(r"^marketplace\.tasks(\.|$)")
# file name endings and web addresses: ``engine.py``, ``slurm.schedmd.com``
NOT_NAMES = {"py", "md", "json", "csv", "txt", "html", "js", "yaml", "yml", "toml", "gz", "swf", "png", "svg",
             "cfg", "ini", "sh", "pdf", "out", "tsv", "com", "org", "net", "io", "edu"}
# the layers a part holds (README "Layout"): a module, never a variable, goes by one of these names
LAYERS = {"views", "selectors", "services", "models", "api", "charts", "forms", "urls", "hooks", "serializers",
          "adapters", "tasks"}
REF = re.compile(r"(?<![\w./\-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/\-])")


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for top in TOPS:
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _names(body: list[ast.stmt]) -> dict[str, ast.AST | None]:
    """The names a module or class body binds, with the class node for a class."""
    out: dict[str, ast.AST | None] = {}
    for node in body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = None
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                out.update({n.id: None for n in ast.walk(target) if isinstance(n, ast.Name)})
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update({(alias.asname or alias.name).split(".")[0]: None for alias in node.names})
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            blocks = [getattr(node, "body", []), getattr(node, "orelse", []), getattr(node, "finalbody", [])]
            blocks += [h.body for h in getattr(node, "handlers", [])]
            for block in blocks:
                out.update(_names(block))
    return out


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text())


def _members(cls: ast.ClassDef) -> dict[str, ast.AST | None]:
    """A class's names: its body's and the ``self.x`` its methods assign."""
    out = _names(cls.body)
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            out.setdefault(node.attr, None)
    return out


@cache
def _class_members() -> frozenset[str]:
    """Every name any class of the project has: a reference failing at one reads a variable's attribute."""
    return frozenset(name for module in MODULES for node in ast.walk(_tree(module))
                     if isinstance(node, ast.ClassDef) for name in _members(node))


def _resolve(dotted: str, base: str = "") -> tuple[bool, str | None]:
    """Whether ``base.dotted`` names a module or a name in one, and the name it failed at once a module
    matched past ``base`` (None: the reference's first word is no module under ``base``)."""
    parts = (f"{base}.{dotted}" if base else dotted).split(".")
    floor = len(base.split(".")) if base else 0
    for i in range(len(parts), floor, -1):
        if ".".join(parts[:i]) in MODULES:
            break
    else:
        return False, None
    scope = _names(_tree(".".join(parts[:i])).body)
    for attr in parts[i:]:
        if attr not in scope:
            return False, attr
        node = scope[attr]
        if not isinstance(node, ast.ClassDef):
            return True, None  # a function or value: what follows is its own business
        scope = _members(node)
    return True, None


def _bases(module: str, path: Path) -> list[str]:
    """Where a reference in ``module`` is read from: its package, the parents, the top-level packages."""
    parts = module.split(".")
    package = parts if path.name == "__init__.py" else parts[:-1]
    out = [".".join(package[:i]) for i in range(len(package), 0, -1)]
    return out + [top for top in TOPS if top not in out] + [""]


def _installed(dotted: str) -> bool | None:
    """Whether an installed package outside the project has the name (None: not such a package)."""
    head = dotted.split(".")[0]
    try:
        spec = importlib.util.find_spec(head)
    except (ImportError, ValueError):
        return None
    if spec is None or head in TOPS:
        return None
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of a file."""
    source = path.read_text()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                yield first.lineno, first.value.value


def dangling_references() -> list[str]:
    """``path:line: reference`` for every module reference in a comment or docstring that resolves to nothing."""
    basenames: dict[str, set[str]] = {}
    for module in MODULES:
        basenames.setdefault(module.split(".")[0], set()).add(module.rsplit(".", 1)[-1])
    out = []
    for module, path in sorted(MODULES.items()):
        top = module.split(".")[0]
        own = basenames[top] | set(TOPS)
        for line, text in _texts(path):
            for match in REF.finditer(text):
                ref = match.group(1)
                parts = ref.split(".")
                if parts[-1] in NOT_NAMES or TASK_NAME.match(ref):
                    continue
                results = [_resolve(ref, base) for base in _bases(module, path)]
                if any(ok for ok, _ in results):
                    continue
                installed = _installed(ref)
                if installed is not None:
                    if installed:
                        continue
                elif parts[0] not in LAYERS and any(failed in _class_members() for _, failed in results if failed):
                    continue  # a variable's attribute (``market.state_version``); a layer is never a variable
                elif all(failed is None for _, failed in results) and parts[0] not in own:
                    continue  # the first word is no module here: prose
                out.append(f"{path.relative_to(ROOT)}:{line + text[:match.start()].count(chr(10))}: {ref}")
    return out


def test_comments_and_docstrings_name_modules_that_exist() -> None:
    dangling = dangling_references()
    assert not dangling, "module references that resolve to nothing:\n" + "\n".join(dangling)


def test_the_reference_reader_tells_a_dangling_name_from_a_true_one() -> None:
    # the reading itself: a moved module's old name does not resolve, its new one does, relative to a package
    assert _resolve("marketplace.market.services.clock.cluster_advance") == (True, None)
    assert _resolve("market.services.cluster", "marketplace") == (False, "cluster")
    assert _resolve("Plan.shares", "scheduler") == (False, None)  # a class, not a module, of the package
    assert _resolve("scheduler.plan.Plan.shares")[0]
    assert not _resolve("marketplace.models.accounts")[0]
    assert "marketplace.market" in _bases("marketplace.market.services.clock", MODULES["marketplace.market.services.clock"])


def _bound() -> set[str]:
    """Every name the project binds: modules, definitions, arguments, assignments, attributes, aliases, keys."""
    out = {module.rsplit(".", 1)[-1] for module in MODULES}
    for module in MODULES:
        for node in ast.walk(_tree(module)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Name):
                out.add(node.id)
            elif isinstance(node, ast.arg):
                out.add(node.arg)
            elif isinstance(node, ast.Attribute):
                out.add(node.attr)
            elif isinstance(node, ast.alias):
                out.add(node.asname or node.name.rsplit(".", 1)[-1])
            elif isinstance(node, ast.keyword) and node.arg:
                out.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                out.add(node.value)  # a dict's key, a field's name
    return out


WORD = re.compile(r"(?<![\w.\-/])([a-z]+(?:_[a-z]+)+)(?![\w\-/])")


def unbound_compounds() -> list[str]:
    """``path:line: name`` for every layer-and-part compound (``selectors_visibility``, ``market_records``) a
    comment or docstring names that nothing in the project binds: the name of an alias or module gone."""
    words = {module.rsplit(".", 1)[-1] for module in MODULES} | LAYERS
    bound = _bound()
    out = []
    for path in sorted(MODULES.values()):
        for line, text in _texts(path):
            for match in WORD.finditer(text):
                name = match.group(1)
                head, _, tail = name.partition("_")
                if name in bound or head not in words or tail not in words or not {head, tail} & (LAYERS | {"records"}):
                    continue
                out.append(f"{path.relative_to(ROOT)}:{line + text[:match.start()].count(chr(10))}: {name}")
    return out


def test_comments_and_docstrings_name_no_compound_that_is_gone() -> None:
    gone = unbound_compounds()
    assert not gone, "layer-and-part compounds that name nothing:\n" + "\n".join(gone)


# a layer's name and its singular (``market_service``)
LAYER_WORDS = LAYERS | {layer.removesuffix("s") for layer in LAYERS}


def compound_aliases() -> list[str]:
    """``path:line: import`` for every import of a project module under an alias that joins a layer's name
    to another word (``selectors as selectors_abacus``, ``hooks as deadline_hooks``): the layer-and-part
    compound the layout removed from module names, brought back as a name in the code."""
    out = []
    for folder in (*TOPS, "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    pairs = [(f"{node.module}.{a.name}", a.asname) for a in node.names]
                elif isinstance(node, ast.Import):
                    pairs = [(a.name, a.asname) for a in node.names]
                else:
                    continue
                for target, alias in pairs:
                    words = alias.split("_") if alias else []
                    if target in MODULES and len(words) > 1 and set(words) & LAYER_WORDS:
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {target} as {alias}")
    return out


def test_no_import_alias_brings_back_a_compound_name() -> None:
    found = compound_aliases()
    assert not found, "aliases that join a layer to a part; import the names, or the module by its path:\n" + "\n".join(found)


# A section of the product specification or a numbered issue lives outside the repository; a reference
# names a page of docs/, a section of the README or a paper's section instead. Another project's issue
# (``kombu issue 582``) is that project's public record and may be named.
OUTSIDE = re.compile(r"\b" + "SP" + "EC" + r"\b|\b[Ii]ssues? #?\d+")
OTHER_PROJECTS = re.compile(r"\b(kombu|celery|django|plotly|numpy|scipy) issue \d+")


def outside_references() -> list[str]:
    """``path:line: text`` for every mention of the specification or of a numbered issue in a text file
    under ``marketplace/``, ``scheduler/``, ``simulator/``, ``tests/`` or ``bench/``."""
    out = []
    for folder in (*TOPS, "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            for number, line in enumerate(text.splitlines(), 1):
                for match in OUTSIDE.finditer(OTHER_PROJECTS.sub("", line)):
                    out.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)}")
    return out


def test_the_repository_stands_alone() -> None:
    found = outside_references()
    assert not found, "references to material outside the repository; name docs/, the README or a paper:\n" + "\n".join(found)


def test_the_simulator_imports_no_experiment() -> None:
    # the experiments sit on top of the simulator: a workload, the cluster or the market that imported one
    # would make every experiment's set-up part of the layers below it (the Table 1 workload lives in
    # simulator/workloads/table1.py for this reason)
    upward = []
    for path in sorted((ROOT / "simulator").rglob("*.py")):
        if "experiments" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" for a in node.names]  # ``from simulator import experiments`` too
            else:
                continue
            upward += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names
                       if name == "simulator.experiments" or name.startswith("simulator.experiments.")]
    assert not upward, "imports of an experiment below the experiments:\n" + "\n".join(upward)
