"""The dashboard's figures as the JSON text its data endpoint sends, kept in the cache.

The figures change only with a clearing (prices, shares) or a new sample (fairness, utilisation),
so they are keyed by the market's *figures version* (cleared version, clearings, newest sample).
All but the share chart are the same for every viewer and are computed once for all of them
(:func:`shared_figures_json`); the share chart names jobs and is kept per viewer scope
(:func:`jobs_figure_json`).

At a big installation the shared figures cost a few hundred ms to compute (a day of samples
and prices, ERA's price curve), and every tick makes a new version. So while someone watches
the dashboard (a poll in the last :data:`WATCH_S` seconds), the clock's after-tick work
computes them on a worker (:func:`figures_warm`, through ``dashboard.tasks``) and a poll only
reads them. A poll that finds no figures for the newest version is served the newest figures
computed (at most :data:`STALE_S` wall seconds old: at most a tick or a clearing behind) and
asks a worker for the new ones, as HTTP's ``stale-while-revalidate`` does; with no figures
that recent (the first poll, a cache outage) it computes them itself. With Celery eager (no
broker) the asked-for computation runs in the poll, so a poll is never served stale there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from plotly.utils import PlotlyJSONEncoder

from marketplace.dashboard.charts import dashboard_figures
from marketplace.infra.resilience import cache_add, cache_delete, cache_get, cache_set, publish_task
from marketplace.market import selectors, visibility
from marketplace.market.models.market import Market
from marketplace.market.prices import one_unit_prices
from marketplace.web import charts
from marketplace.web.shortcuts import MAX_POINTS

CACHE_S = 60
"""Wall seconds a version's figures stay in the cache (a version's figures never change)."""
WATCH_S = 60
"""Wall seconds after a dashboard poll during which the clock keeps the market's figures computed."""
STALE_S = 10.0
"""Wall seconds for which the newest computed figures may be served while the newest version's are computed."""
BUSY_S = 30
"""Wall seconds after which an asked-for computation that never ended (a lost task) no longer blocks the next."""
TASK = "marketplace.tasks.dashboard_figures_task"


def figures_version(market: Market) -> str:
    """What the figures depend on: the market, its cleared version and clearings, and its newest sample time."""
    return f"{market.pk}:{market.cleared_version}:{market.clearings}:{selectors.last_sample_time(market=market)}"


def watch(market_id: int) -> None:
    """Note that someone polls the market's dashboard (the clock then computes its figures after each tick)."""
    cache_set(f"dashboard-watched:{market_id}", 1, WATCH_S)


def watched(market_id: int) -> bool:
    """Whether someone polled the market's dashboard in the last :data:`WATCH_S` seconds."""
    return cache_get(f"dashboard-watched:{market_id}") is not None


def shared_figures_json(market: Market, version: str) -> str:
    """Every dashboard figure but the share chart, as a JSON object's text (``{"name": figure, ...}``),
    for ``market`` as read now (``version``: its :func:`figures_version`): that version's figures from
    the cache, else (see the module's text) the newest figures computed if at most :data:`STALE_S`
    old while a worker computes these, else computed here."""
    text = cache_get(f"dashboard-figures:{version}")
    if isinstance(text, str):
        return text
    latest = cache_get(f"dashboard-figures-latest:{market.pk}")
    if isinstance(latest, tuple) and len(latest) == 2 and time.time() - latest[1] <= STALE_S:
        ask(market.pk)  # eager (no broker): computed here and now
        text = cache_get(f"dashboard-figures:{version}")
        if not isinstance(text, str):
            text = cache_get(f"dashboard-figures:{latest[0]}")
        if isinstance(text, str):
            return text
    return _store(market, version)


def ask(market_id: int) -> None:
    """Have a worker compute the market's newest figures (:func:`figures_warm`), unless one is asked
    already: at most one computation per market is queued or running, however often the clock ticks
    (one that would take longer than a tick never piles up a queue)."""
    if cache_add(f"dashboard-figures-busy:{market_id}", 1, BUSY_S) and not publish_task(TASK, market_id):
        cache_delete(f"dashboard-figures-busy:{market_id}")  # the broker is down: the next poll computes them itself


def figures_warm(market_id: int) -> bool:
    """Compute and keep the shared figures of the market's newest version, unless kept already.

    Returns True when it computed them. Raises ``Market.DoesNotExist`` for an unknown id."""
    try:
        market = Market.objects.get(pk=market_id)
        version = figures_version(market)
        if isinstance(cache_get(f"dashboard-figures:{version}"), str):
            return False
        _store(market, version)
        return True
    finally:
        cache_delete(f"dashboard-figures-busy:{market_id}")


def jobs_figure_json(market: Market, version: str, viewer: visibility.Viewer, only_own: bool) -> str:
    """The share chart for ``viewer`` (staff's every tenant's jobs unless ``only_own``), as JSON text, cached per
    ``version`` (the market's :func:`figures_version`)."""
    scope = "all" if viewer.all_tenants and not only_own else (f"t{viewer.tenant.pk}" if viewer.tenant else "none")
    return _cached_json(f"dashboard-jobs:{version}:{scope}", lambda: jobs_figure(market, viewer, only_own))


def shared_figures(market: Market) -> dict[str, charts.Figure]:
    """Every dashboard figure but the share chart (``dashboard.charts.dashboard_figures``): the same for every viewer."""
    times = selectors.sample_times(market=market, max_points=MAX_POINTS)
    types = selectors.resource_types_of(market=market)
    figures = dashboard_figures(
        resources=[(t.name, t.capacity) for t in types],
        fairness=selectors.fairness_points(market=market, times=times),
        samples=selectors.market_points(market=market, times=times),
        prices=selectors.price_points(market=market, max_points=MAX_POINTS),
        shares=[], job_labels={}, now=market.sim_time, unit_prices=one_unit_prices(market=market, types=types),
    )
    figures.pop("jobs")
    return figures


def jobs_figure(market: Market, viewer: visibility.Viewer, only_own: bool) -> charts.Figure:
    """The dashboard's share chart for ``viewer`` (``dashboard.charts.dashboard_figures``' ``jobs``)."""
    labels = visibility.chart_jobs_for(market=market, viewer=viewer, only_own=only_own)
    return charts.job_share_figure(selectors.share_points(market=market, job_ids=list(labels), max_points=MAX_POINTS), labels=labels,
                                   until=selectors.job_share_until(market=market, job_ids=list(labels)),
                                   unit=charts.time_unit(market.sim_time))


def _store(market: Market, version: str) -> str:
    text = json.dumps(shared_figures(market), cls=PlotlyJSONEncoder)
    cache_set(f"dashboard-figures:{version}", text, CACHE_S)
    cache_set(f"dashboard-figures-latest:{market.pk}", (version, time.time()), CACHE_S)  # its text: under its version
    return text


def _cached_json(key: str, build: Callable[[], Any]) -> str:
    """``build()`` as JSON text, kept in the cache under ``key`` for :data:`CACHE_S`. A cache outage is a miss."""
    text = cache_get(key)
    if not isinstance(text, str):
        text = json.dumps(build(), cls=PlotlyJSONEncoder)
        cache_set(key, text, CACHE_S)
    return text
