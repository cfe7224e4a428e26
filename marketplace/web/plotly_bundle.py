"""Which plotly.js bundle a page loads, and the static-files finder that serves the full one.

Two bundles are served, both offline (no CDN), both at the plotly.js version the pinned
``plotly`` Python package bundles:

- ``vendor/plotly/plotly-basic.min.js`` (1.2 MB, in ``static/``): the "basic" partial bundle,
  trace types ``scatter``, ``bar`` and ``pie``. Every page's own charts (each part's
  ``charts.py``) use only these, so every page loads this one by default.
- ``vendor/plotly/plotly.min.js`` (4.8 MB): the full bundle, served straight from the plotly
  package's ``package_data`` by :class:`PlotlyBundleFinder` (nothing copied into the repository,
  so it cannot drift from the pinned version). Only a lab run page whose figures need another
  trace type (a paper's box plot or histogram, ``simulator.experiments``) loads it:
  :func:`bundle_for`; the page also links the styles it would insert (:data:`BUNDLE_STYLES`).

Both bundles insert the same global styles, so ``static/vendor/plotly/plotly-basic.css``
(linked by ``templates/base.html``) serves either.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core import checks
from django.core.files.storage import FileSystemStorage

BASIC_BUNDLE = "vendor/plotly/plotly-basic.min.js"
FULL_BUNDLE = "vendor/plotly/plotly.min.js"
# The trace types the basic bundle registers (its README; tests/marketplace/web/test_pages_assets.py
# reads them out of the bundle's text and compares).
BASIC_TRACES = frozenset({"scatter", "bar", "pie"})
PACKAGE_DATA = Path(plotly.__file__).parent / "package_data"
# Styles a bundle inserts when it loads, as a <style> element with this id unless an element with
# that id is already in the page: the full bundle's are maplibre-gl's (for map traces). The site's
# Content-Security-Policy (style-src 'self') refuses such an element, so a page loading the bundle
# links them from static/ under that id instead (static/vendor/plotly/README.md). The basic bundle
# carries the same code but never runs it.
BUNDLE_STYLES: dict[str, tuple[tuple[str, str], ...]] = {
    BASIC_BUNDLE: (),
    FULL_BUNDLE: (("vendor/plotly/maplibre-gl.css", "9f215cf04c5486422605d13261cb87401f4e7763b6296af81e98efbc0130da53"),),
}


def trace_types(figures: Iterable[Mapping[str, Any]]) -> set[str]:
    """The trace types of plotly figure dicts (``{"data": [trace, ...], "layout": ...}``); a trace
    without a ``type`` is a ``scatter``, as plotly.js draws it."""
    return {str(trace.get("type", "scatter")) for figure in figures for trace in figure.get("data", [])}


def bundle_for(figures: Iterable[Mapping[str, Any]]) -> str:
    """The static path of the lightest served bundle that draws every trace of ``figures``:
    :data:`BASIC_BUNDLE` when all their trace types are in :data:`BASIC_TRACES` (no figures
    included), else :data:`FULL_BUNDLE`."""
    return BASIC_BUNDLE if trace_types(figures) <= BASIC_TRACES else FULL_BUNDLE


class PlotlyBundleFinder(BaseFinder):
    """Finds :data:`FULL_BUNDLE` in the installed plotly package (``package_data/plotly.min.js``)
    and nothing else, for ``runserver``, WhiteNoise's finders and ``collectstatic`` alike."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=PACKAGE_DATA)
        self.storage.prefix = str(Path(FULL_BUNDLE).parent)  # type: ignore[attr-defined]  # collectstatic reads it

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """An error when the installed plotly package has no ``package_data/plotly.min.js``."""
        if (PACKAGE_DATA / Path(FULL_BUNDLE).name).is_file():
            return []
        return [checks.Error(f"{PACKAGE_DATA / Path(FULL_BUNDLE).name} is missing: lab figures with box or histogram "
                             "traces cannot draw", hint="reinstall the pinned plotly package (requirements.txt)",
                             id="marketplace.E001")]

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str] | None:
        """The bundle's absolute path for :data:`FULL_BUNDLE`; ``None`` (``[]`` with ``find_all``) otherwise."""
        if kwargs:  # Django 5.2 still accepts the deprecated ``all`` (as its own finders do)
            find_all = self._check_deprecated_find_param(find_all=find_all, **kwargs)
        found = str(PACKAGE_DATA / Path(FULL_BUNDLE).name) if path == FULL_BUNDLE else None
        if find_all:
            return [found] if found else []
        return found

    def list(self, ignore_patterns: Iterable[str] | None) -> Iterator[tuple[str, FileSystemStorage]]:
        """The one file, relative to the storage (whose ``prefix`` places it under ``vendor/plotly/``)."""
        yield Path(FULL_BUNDLE).name, self.storage
