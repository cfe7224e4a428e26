"""The clock's tick leaves nothing for Python's cyclic garbage collector, which it keeps paused (infra.collector).

The collector is off while a tick holds the market row. That costs nothing only if the tick makes no
reference cycles: reference counting frees all it drops, and the passes it skips would have found
nothing to free. These tests check the property on a tick with departures, clearings, charges and samples,
and check that the pause restores the collector's state whatever happens inside it."""

from __future__ import annotations

import gc

import pytest

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.infra import collector
from marketplace.market.models.jobs import Job
from marketplace.market.services.clock import cluster_advance


def _garbage_of(call):  # type: ignore[no-untyped-def]
    """What ``call`` left that only the cyclic collector could free (its types), and its result."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = call()
        gc.collect()
        left = sorted({f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return left, result


def test_a_tick_with_departures_and_clearings_makes_no_reference_cycles(
        market, alice, bob, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        jobs = [bid_submit(tenant=(alice, bob)[k % 2], budget="20", work=[WorkItem("map", 1 + k % 3, 5.0 + 4.0 * k),
                                                                          WorkItem("reduce", 1, 3.0)])
                for k in range(8)]
    with django_capture_on_commit_callbacks(execute=True):
        cluster_advance(market_id=market.pk, until=1.0)  # the engine loaded, the first Plan applied
    # when ticks run past every job's end, clearing after each departure
    for until in (40.0, 90.0, 300.0):
        with django_capture_on_commit_callbacks(execute=True):
            left, tick = _garbage_of(lambda until=until: cluster_advance(market_id=market.pk, until=until))
        assert left == [], f"a tick to {until} s left reference cycles of {left}"
        assert gc.isenabled()
    # then they did the work they name
    assert tick.sim_time == 300.0
    assert set(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("status", flat=True)) == {Job.Status.FINISHED}


def test_the_pause_turns_the_collector_off_until_the_last_block_ends_and_restores_it_after_an_error():
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still runs
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("a failed tick")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()
