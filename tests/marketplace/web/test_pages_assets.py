"""Page assets: the plotly.js partial bundle covers every trace type the
site draws and matches the pinned plotly package; every static file a template names
exists; the favicon and the error pages are in the site's style."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import plotly
import pytest
from django.contrib.staticfiles import finders
from django.test import Client, override_settings
from django.urls import path

ROOT = Path(__file__).resolve().parents[3]
# the site-wide templates and each part's own (settings.TEMPLATES["DIRS"])
TEMPLATE_FILES = sorted(p for d in [ROOT / "templates", *(ROOT / "marketplace").glob("*/templates")] for p in d.rglob("*.html"))
BUNDLE = ROOT / "static" / "vendor" / "plotly" / "plotly-basic.min.js"
BASIC_TRACES = {"scatter", "bar", "pie"}  # the "basic" bundle (its README)
FIGURE_SOURCES = [*sorted((ROOT / "marketplace").glob("charts*.py")), *sorted((ROOT / "simulator" / "experiments").glob("*.py"))]


def _trace_types(source: Path) -> set[str]:
    """Every value of a "type" key in a dict literal that builds a trace (has "x", "y", "name",
    "mode" or "values" beside it) in ``source``."""
    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if not isinstance(node, ast.Dict):
            continue
        keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
        if "type" in keys and keys & {"x", "y", "name", "mode", "values", "stackgroup"}:
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "type":
                    assert isinstance(v, ast.Constant), f"{source.name}: a computed trace type cannot be checked"
                    found.add(v.value)
    return found


def test_every_trace_type_drawn_is_in_the_basic_bundle():
    used = set().union(*(_trace_types(p) for p in FIGURE_SOURCES))
    assert {"scatter", "bar"} <= used  # the scan sees the figures at all
    assert used <= BASIC_TRACES


def test_the_bundle_matches_the_plotly_package_and_is_small():
    head = BUNDLE.read_text()[:200]
    package = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()[:200]
    ours = re.search(r"plotly\.js \(basic - minified\) (v[\d.]+)", head)
    theirs = re.search(r"plotly\.js (v[\d.]+)", package)
    assert ours and theirs and ours.group(1) == theirs.group(1)
    assert BUNDLE.stat().st_size < 1.5e6  # the full bundle is 4.8 MB


def test_every_static_file_a_template_names_exists():
    missing = []
    for template in TEMPLATE_FILES:
        for name in re.findall(r"\{% static ['\"]([^'\"]+)['\"] %\}", template.read_text()):
            if finders.find(name) is None:
                missing.append(f"{template.name}: {name}")
    assert missing == []
    assert finders.find("vendor/plotly/plotly.min.js") is None  # the 4.8 MB bundle is no longer served


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
