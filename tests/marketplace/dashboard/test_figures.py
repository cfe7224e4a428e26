"""The dashboard's figures kept computed for its viewers: after each tick on a worker while someone
watches, and served a tick behind (never more than ``STALE_S``) while a worker computes the newest."""

from __future__ import annotations

import json
import time
from unittest import mock

from django.test import Client

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.dashboard import figures
from marketplace.market import hooks
from marketplace.market.models.market import Market
from marketplace.market.services.clearing import market_clear
from marketplace.market.tasks import cluster_tick_task

WORK = [WorkItem("map", 2, 5.0), WorkItem("reduce", 1, 5.0)]


def _poll(client: Client) -> dict:  # type: ignore[type-arg]
    resp = client.get("/dashboard/data.json")
    assert resp.status_code == 200, resp.content[:300]
    return resp.json()  # type: ignore[no-any-return]


def _new_version(tenant) -> None:  # type: ignore[no-untyped-def]
    bid_submit(tenant=tenant, budget="1", work=WORK)
    market_clear(market_id=tenant.market_id)


def _fresh(market_id: int) -> dict:  # type: ignore[type-arg]
    """The shared figures of the market as it is now, computed here (the oracle)."""
    return json.loads(json.dumps(figures.shared_figures(Market.objects.get(pk=market_id)), cls=figures.PlotlyJSONEncoder))


def _shared(body: dict) -> dict:  # type: ignore[type-arg]
    return {k: v for k, v in body["figures"].items() if k != "jobs"}


def test_the_clock_computes_the_figures_after_a_tick_only_while_someone_watches(client, alice, market):
    client.force_login(alice.user)
    _new_version(alice)
    with mock.patch.object(figures, "shared_figures", wraps=figures.shared_figures) as shared:
        cluster_tick_task(market.pk)  # nobody has looked: nothing computed
        assert shared.call_count == 0
        _poll(client)  # computed in the poll (nothing kept yet); the dashboard is now watched
        assert shared.call_count == 1
        _new_version(alice)
        cluster_tick_task(market.pk)  # after the tick (eager here: in this process) the new version's figures are computed
        assert shared.call_count == 2
        body = _poll(client)  # ... and the poll only reads them
        assert shared.call_count == 2
    assert _shared(body) == _fresh(market.pk)


def test_a_poll_is_served_the_last_figures_while_a_worker_computes_the_new_ones(client, alice, market):
    client.force_login(alice.user)
    _new_version(alice)
    before = _shared(_poll(client))
    asked: list[tuple[str, tuple[object, ...]]] = []
    _new_version(alice)  # a new cleared version nobody has computed figures for
    with mock.patch.object(figures, "publish_task", side_effect=lambda name, *args: asked.append((name, args)) or True), \
            mock.patch.object(figures, "shared_figures", wraps=figures.shared_figures) as shared:
        stale = _shared(_poll(client))
        again = _shared(_poll(client))
        assert shared.call_count == 0  # nothing computed in the polls ...
        assert asked == [(figures.TASK, (market.pk,))]  # ... a worker asked once for this version
        assert stale == before == again
        assert stale != _fresh(market.pk)  # a clearing behind
        figures.figures_warm(market.pk)  # the worker's run
        assert _shared(_poll(client)) == _fresh(market.pk)


def test_figures_older_than_the_stale_limit_are_computed_in_the_poll(client, alice, market):
    client.force_login(alice.user)
    _new_version(alice)
    _poll(client)
    _new_version(alice)
    now = time.time()
    with mock.patch.object(figures.time, "time", return_value=now + figures.STALE_S + 1), \
            mock.patch.object(figures, "publish_task") as publish:
        body = _poll(client)
    publish.assert_not_called()
    assert _shared(body) == _fresh(market.pk)


def test_a_failing_after_tick_part_is_logged_and_the_clock_goes_on(market, caplog):
    failing = mock.Mock(side_effect=RuntimeError("boom"))
    with mock.patch.object(hooks.part("dashboard"), "after_tick", failing):
        assert cluster_tick_task(market.pk) == 1
    failing.assert_called_once_with(market.pk)
    assert "after-tick work of dashboard failed" in caplog.text


def test_at_most_one_computation_per_market_is_queued_however_often_the_clock_ticks(client, alice, market):
    client.force_login(alice.user)
    _poll(client)  # watched
    with mock.patch.object(figures, "publish_task", return_value=True) as publish:
        for _ in range(3):
            _new_version(alice)
            cluster_tick_task(market.pk)
        assert publish.call_count == 1  # the worker has not run yet: the later ticks ask nothing more
        figures.figures_warm(market.pk)  # it runs (the newest version) and frees the market's slot
        cluster_tick_task(market.pk)
        assert publish.call_count == 2
    with mock.patch.object(figures, "publish_task", return_value=False) as publish:  # the broker is down
        figures.figures_warm(market.pk)
        cluster_tick_task(market.pk)
        cluster_tick_task(market.pk)
        assert publish.call_count == 2  # a failed publication leaves the slot free for the next tick
