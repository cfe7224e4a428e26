"""Page assets: every trace type a figure draws is registered in the plotly.js bundle its page
loads (the basic partial bundle on every page, the full one on a lab run whose figures need it);
the basic bundle matches the pinned plotly package; every static file a template names exists;
the favicon and the error pages are in the site's style."""

from __future__ import annotations

import ast
import pkgutil
import re
from functools import cache
from pathlib import Path

import plotly
import plotly.graph_objects as go
import pytest
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.test import Client, override_settings
from django.urls import path, reverse
from plotly.basedatatypes import BaseTraceType

import simulator.experiments
from marketplace.lab.models import ExperimentRun
from marketplace.web.plotly_bundle import BASIC_BUNDLE, BASIC_TRACES, BUNDLE_STYLES, FULL_BUNDLE, bundle_for

ROOT = Path(__file__).resolve().parents[3]
# the site-wide templates and each part's own, at any depth (settings.TEMPLATES["DIRS"] and app dirs)
TEMPLATE_FILES = sorted({*(ROOT / "templates").rglob("*.html"), *(ROOT / "marketplace").rglob("templates/**/*.html")})
BUNDLE = ROOT / "static" / "vendor" / "plotly" / "plotly-basic.min.js"
# Modules that may build plotly traces, at any depth: every module of the web app (its parts'
# charts.py and anything else) draws on a page that loads the basic bundle; every module under
# simulator/ draws on a lab run page, which loads bundle_for(its figures).
PAGE_SOURCES = sorted(p for p in (ROOT / "marketplace").rglob("*.py") if "migrations" not in p.parts)
LAB_SOURCES = sorted((ROOT / "simulator").rglob("*.py"))
TRACE_KEYS = {"x", "y", "name", "mode", "values", "stackgroup"}  # a dict with "type" and one of these is a trace
OPENAPI_KEYS = {"in", "$ref", "properties", "items"}  # an OpenAPI object (a security scheme, a schema) has "type" and "name" too
GO_TRACES = {name: name.lower() for name in dir(go) if isinstance(getattr(go, name), type) and issubclass(getattr(go, name), BaseTraceType)}


def _trace_types(source: Path) -> set[str]:
    """Every trace type ``source`` builds: the "type" of a dict literal or ``dict(...)`` call that
    builds a trace (has "x", "y", "name", "mode", "values" or "stackgroup" beside it), and the
    type of each ``plotly.graph_objects`` trace class it calls (``go.Box(...)``: "box")."""
    found = set()
    tree = ast.parse(source.read_text())
    where = source.relative_to(ROOT)
    imported = {f"{n.module}.{a.name}" if isinstance(n, ast.ImportFrom) else a.name
                for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
    if any(m.startswith("plotly.express") for m in imported):
        pytest.fail(f"{where}: plotly.express figures' trace types cannot be read from the source")
    uses_go = any(m.startswith("plotly.graph_objects") for m in imported)  # a Table(...) elsewhere is no trace
    for node in ast.walk(tree):
        pairs: list[tuple[object, ast.expr]] = []
        if isinstance(node, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            pairs = [(k.arg, k.value) for k in node.keywords]
        elif isinstance(node, ast.Call) and uses_go:
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in GO_TRACES:
                found.add(GO_TRACES[called])
        keys = {k for k, _ in pairs}
        if "type" in keys and keys & TRACE_KEYS and not keys & OPENAPI_KEYS:
            value = dict(pairs)["type"]
            assert isinstance(value, ast.Constant), f"{where}:{value.lineno}: a computed trace type cannot be checked"
            found.add(value.value)
    return found


@cache
def _registered(bundle: str) -> frozenset[str]:
    """The trace types a served bundle (a static path) registers: plotly.js registers each trace
    module as an object with ``moduleType:"trace",name:"<type>"``."""
    file = finders.find(bundle)
    assert file, f"{bundle} is not served"
    return frozenset(re.findall(r'moduleType:"trace",name:"(\w+)"', Path(file).read_text()))


def _drawing(sources: list[Path]) -> dict[Path, set[str]]:
    return {p: types for p in sources if (types := _trace_types(p))}


def test_the_scan_finds_every_module_that_draws():
    """The globs cannot go hollow again: every part whose templates load plotly has a module the scan
    reads traces from, every registered experiment's module is scanned, and the scan finds at
    least one drawing module per such part and per experiment package."""
    pages, lab = _drawing(PAGE_SOURCES), _drawing(LAB_SOURCES)
    part_of = lambda p: p.relative_to(ROOT / "marketplace").parts[0]  # noqa: E731
    plotted = {part_of(t) for t in TEMPLATE_FILES if t.is_relative_to(ROOT / "marketplace") and "vendor/plotly/" in t.read_text()}
    assert len(plotted) >= 3, plotted  # the auction, dashboard, lab, ... pages draw charts
    assert plotted <= {part_of(p) for p in pages}, "a part's pages load plotly but the scan reads no traces there"
    for charts in (ROOT / "marketplace").rglob("charts.py"):
        assert charts in pages, f"{charts.relative_to(ROOT)}: a charts module the scan reads no trace from"
    registry = {k: e for k, e in simulator.experiments.load_all().items()
                if e.run.__module__.startswith("simulator.")}  # not the toy experiments lab tests register
    modules = {Path(simulator.experiments.__file__).parent.joinpath(*e.run.__module__.split(".")[2:]) for e in registry.values()}
    scanned = {p.with_suffix("") for p in LAB_SOURCES} | {p.parent for p in LAB_SOURCES if p.name == "__init__.py"}
    assert registry and modules <= scanned, sorted(str(m) for m in modules - scanned)
    packages = [m.name for m in pkgutil.iter_modules(simulator.experiments.__path__) if m.ispkg]
    assert len(pages) + len(lab) >= len(plotted) + len(packages) > 0


def test_every_trace_type_is_registered_in_the_bundle_its_page_loads():
    pages, lab = _drawing(PAGE_SOURCES), _drawing(LAB_SOURCES)
    loads = {**{(p, kind): BASIC_BUNDLE for p, types in pages.items() for kind in types},
             **{(p, kind): bundle_for([{"data": [{"type": kind}]}]) for p, types in lab.items() for kind in types}}
    missing = [f"{p.relative_to(ROOT)} draws {kind!r}, which {bundle} does not register"
               for (p, kind), bundle in sorted(loads.items()) if kind not in _registered(bundle)]
    assert missing == []
    assert {"scatter", "bar"} <= {kind for _, kind in loads}  # the scan reads the figures at all


def test_the_basic_bundle_registers_what_the_chooser_assumes_and_the_full_one_more():
    assert _registered(BASIC_BUNDLE) == BASIC_TRACES
    assert _registered(FULL_BUNDLE) > BASIC_TRACES | {"box", "histogram"}
    assert bundle_for([]) == BASIC_BUNDLE
    assert bundle_for([{"data": [{"x": [1]}, {"type": "bar", "x": [1]}]}]) == BASIC_BUNDLE  # no type: a scatter
    assert bundle_for([{"data": [{"type": "scatter"}]}, {"data": [{"type": "box"}]}]) == FULL_BUNDLE


def test_a_page_loading_the_full_bundle_links_the_styles_it_would_insert():
    """The full bundle inserts maplibre-gl's styles as a <style id=...> unless the id is taken (the
    site's policy refuses the element: a console error on every lab page that loads it). Each style it
    inserts is linked under its id, with the same rules. (The basic bundle never runs that code.)"""
    text = Path(finders.find(FULL_BUNDLE)).read_text()
    insert = re.compile(r'getElementById\("([\w-]+)"\)\)\{var (\w)=document\.createElement\("style"\);'
                        r"\2\.id=\"\1\",\2\.textContent='([^'\\]*)'")
    inserted = {m.group(1): m.group(3) for m in insert.finditer(text)}
    assert inserted and len(inserted) == text.count('createElement("style");')  # the pattern reads every such insertion
    linked = {style_id: Path(finders.find(href)).read_text().strip() for href, style_id in BUNDLE_STYLES[FULL_BUNDLE]}
    assert linked == inserted


def test_the_bundle_matches_the_plotly_package_and_is_small():
    head = BUNDLE.read_text()[:200]
    package = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()[:200]
    ours = re.search(r"plotly\.js \(basic - minified\) (v[\d.]+)", head)
    theirs = re.search(r"plotly\.js (v[\d.]+)", package)
    assert ours and theirs and ours.group(1) == theirs.group(1)
    assert BUNDLE.stat().st_size < 1.5e6  # the full bundle is 4.8 MB
    assert Path(finders.find(FULL_BUNDLE)) == Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def test_every_static_file_a_template_names_exists():
    missing = []
    for template in TEMPLATE_FILES:
        for name in re.findall(r"\{% static ['\"]([^'\"]+)['\"] %\}", template.read_text()):
            if finders.find(name) is None:
                missing.append(f"{template.name}: {name}")
        assert FULL_BUNDLE not in template.read_text(), f"{template.name}: only bundle_for picks the 4.8 MB bundle"
    assert missing == []


@pytest.mark.parametrize(("trace", "bundle"), [({"type": "box", "y": [1, 2]}, FULL_BUNDLE), ({"type": "bar", "y": [1]}, BASIC_BUNDLE)])
def test_a_lab_run_page_loads_the_bundle_its_figures_need(db, trace, bundle):
    staff = get_user_model().objects.create_user("ops", password="pw-12345678", is_staff=True)
    run = ExperimentRun.objects.create(name="abacus_fig11", status=ExperimentRun.Status.DONE, created_by=staff,
                                       result={"figures": [{"data": [trace], "layout": {}}], "tables": [], "summary": ""})
    client = Client()
    client.force_login(staff)
    body = client.get(reverse("lab-run", args=[run.pk])).content.decode()
    assert re.findall(r'src="/static/(vendor/plotly/[^"]+)"', body) == [bundle]
    for href, style_id in BUNDLE_STYLES[bundle]:  # linked before the bundle runs
        assert body.index(f'<link rel="stylesheet" href="/static/{href}" id="{style_id}">') < body.index(bundle)
    assert body.count('<link rel="stylesheet"') == 2 + len(BUNDLE_STYLES[bundle])  # and site.css, plotly-basic.css


def test_pages_link_the_favicon(client, db):
    body = client.get("/login/").content.decode()
    assert 'rel="icon" href="/static/img/favicon.svg"' in body
    assert client.get("/static/img/favicon.svg").status_code == 200


def test_404_page_is_in_the_site_style(client, db):
    response = client.get("/no/such/page/")
    body = response.content.decode()
    assert response.status_code == 404 and "css/site.css" in body and "Not found" in body and "/no/such/page/" in body


def _boom(request):  # type: ignore[no-untyped-def]
    raise RuntimeError("boom")


urlpatterns = [path("boom/", _boom)]


@override_settings(ROOT_URLCONF=__name__, DEBUG=False)
def test_500_page_is_in_the_site_style(db):
    client = Client(raise_request_exception=False)
    response = client.get("/boom/")
    body = response.content.decode()
    assert response.status_code == 500 and "css/site.css" in body and "Something went wrong" in body
    assert "boom" not in body  # no internals


@pytest.mark.parametrize("template", ["404.html", "403.html"])
def test_error_pages_extend_the_layout(template):
    assert (ROOT / "templates" / template).read_text().startswith('{% extends "base.html" %}')


def test_work_tables_label_every_input_for_the_phone_layout():
    # On a phone the work table's header row is hidden and each cell shows its data-label.
    for template in TEMPLATE_FILES:
        text = template.read_text()
        for body in re.findall(r'class="table work-table">.*?<tbody>(.*?)</tbody>', text, flags=re.S):
            cells = re.findall(r"<td\b[^>]*>", body)
            assert cells and all("data-label=" in c for c in cells), template.name
