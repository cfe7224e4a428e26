"""What every page shares: rendering with the market's context, the tenant gate, pagination,
streamed CSV, and the chart point cap (``MAX_POINTS``).

Tenant pages act on ``request.user.tenant``; a job of another tenant is a 404, never a 403,
so job ids are not an oracle.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from marketplace.market import selectors
from marketplace.market.models.market import Market
from marketplace.web import charts

PAGE_SIZE = 25


View = Callable[..., HttpResponse]


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], *, market: Market | None = None, status: int = 200
) -> HttpResponse:
    """Render with what the base layout needs: the market and its simulated clock."""
    market = market or selectors.market_or_none()
    clock = selectors.market_clock(market=market) if market else None
    base = {"market": market, "clock": clock, "sim_clock": charts.format_hms(clock["sim_time"]) if clock else None}
    return render(request, template, base | context, status=status)


def tenant_required(view: View) -> View:
    """Log-in required, and the user must be a tenant (``request.tenant``); others get a 403 page."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        tenant = selectors.tenant_of(user=request.user)
        if tenant is None:
            return render_page(request, "web/not_tenant.html", {}, status=403)
        request.tenant = tenant  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapper


def paginate(request: HttpRequest, items: Any, *, count: int | None = None) -> Page:
    """The page ``?page=`` asks for (the last for a page past the end, the first for a bad one) of
    ``items``, ``PAGE_SIZE`` rows each. ``count``: how many ``items`` holds, when the caller knows it
    more cheaply than ``items.count()`` would."""
    paginator = Paginator(items, PAGE_SIZE)
    if count is not None:
        paginator.count = count  # Paginator.count is a cached property: this is its value
    return paginator.get_page(request.GET.get("page"))


class _Echo:
    """A file-like object whose write returns the line (for streaming CSV)."""

    def write(self, value: str) -> str:
        return value


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A cell a spreadsheet will not run: text starting like a formula (``=``, ``+``, ``-``, ``@``,
    tab, carriage return) gets a leading ``'`` (OWASP's CSV injection advice); numbers are kept."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_START) else value


def csv_safe(rows: Iterable[Iterable[Any]]) -> Iterator[list[Any]]:
    """``rows`` with every cell through :func:`csv_cell`."""
    return ([csv_cell(v) for v in row] for row in rows)


def csv_response(filename: str, header: list[str], rows: Iterable[list[Any]]) -> StreamingHttpResponse:
    """A streamed CSV download; text cells guarded against spreadsheet formulas (:func:`csv_cell`)."""
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(header)
        for row in csv_safe(rows):
            yield writer.writerow(row)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


MAX_POINTS = 500  # per trace on the dashboard: hours of simulated time stay a few hundred kB


def blank(value: object) -> object:
    return "" if value is None else value
