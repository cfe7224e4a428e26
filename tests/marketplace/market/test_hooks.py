"""The core's hooks (README, "Layout"): the clearing, the tick and the sweeper call what the parts
registered, and the parts register exactly what the core used to call by name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields

import pytest

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.lab.services.experiments import experiment_requeue
from marketplace.market import hooks
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.sweeper import market_sweep
from marketplace.reservations.adapters import reserved_job_ids
from marketplace.reservations.hooks import book_missing
from scheduler.plan import Plan

WORK = [WorkItem("map", 4, 10.0, 1.0)]


@pytest.fixture
def test_part() -> Iterator[str]:
    """A part registered by the test, removed afterwards (the registry is process-wide)."""
    yield "test-part"
    for kind in fields(hooks.HOOKS):
        table = getattr(hooks.HOOKS, kind.name)
        for name in [n for n in table if n.startswith("test-part")]:
            table.pop(name)


def test_the_parts_register_what_the_core_used_to_call_by_name() -> None:
    # given the app registry is ready (pytest-django set it up)
    # then ERA keeps reserved jobs out of the auction and books them at sync, Cura works on the
    # tick and the lab's runs are published again by the sweeper
    assert hooks.HOOKS.clearing_exclusions["reservations"] is reserved_job_ids
    assert hooks.HOOKS.engine_syncs["reservations"] is book_missing
    assert set(hooks.HOOKS.tick_work) == {"pools"}
    assert set(hooks.HOOKS.sweep_work) == {"lab"}
    assert set(hooks.HOOKS.promise_sources) == {"reservations", "deadlines"}
    # docs/economy.md: the jobs sold at a fixed price, the one price curve (ERA's) and the prices offered
    assert set(hooks.HOOKS.fixed_prices) == {"reservations", "deadlines"}
    assert set(hooks.HOOKS.price_curves) == {"reservations"}
    assert set(hooks.HOOKS.price_points) == {"reservations", "deadlines"}


def test_registering_a_part_again_replaces_its_hooks(test_part: str) -> None:
    before = dict(hooks.HOOKS.tick_work)
    hooks.register(part=test_part, tick_work=lambda market: None)
    hooks.register(part=test_part, tick_work=lambda market: None)
    assert len(hooks.HOOKS.tick_work) == len(before) + 1


def test_a_clearing_leaves_out_the_jobs_a_part_serves_itself(market, alice, test_part: str) -> None:
    # given two bids, one of which a part claims
    kept = bid_submit(tenant=alice, budget="100", work=WORK)
    claimed = bid_submit(tenant=alice, budget="100", work=WORK)
    seen: list[list[int]] = []

    def claim(job_ids: list[int]) -> set[int]:
        seen.append(job_ids)
        return {claimed.pk} & set(job_ids)

    hooks.register(part=test_part, clearing_exclusion=claim)
    # when the market clears
    result = market_clear(market_id=market.pk)
    # then the part was asked about the new jobs, and the claimed one is not in the Plan
    assert result.status == "cleared" and seen and claimed.pk in seen[-1]
    plan = Plan.from_bytes(bytes(AllocationSnapshot.objects.get(pk=result.snapshot_id).plan))
    assert kept.pk in plan.job_ids.tolist() and claimed.pk not in plan.job_ids.tolist()


def test_a_tick_runs_the_parts_sync_and_work_on_its_clock(market, alice, test_part: str) -> None:
    # given a part with a sync and a tick's work that record the clock
    bid_submit(tenant=alice, budget="100", work=WORK)
    synced: list[float] = []
    worked: list[float] = []
    hooks.register(part=test_part, engine_sync=lambda m, engine, types: synced.append(engine.now),
                   tick_work=lambda m: worked.append(m.sim_time))
    # when the clock advances 5 simulated seconds
    cluster_advance(market_id=market.pk, seconds=5.0)
    # then the part synced the engine before the steps and worked after them, at the new time
    assert synced == [0.0]
    assert worked and worked[-1] == pytest.approx(5.0)


def test_the_sweeper_runs_the_parts_work_and_survives_a_failing_part(market, test_part: str) -> None:
    # given a part whose sweep work fails, and one after it that publishes run 42
    def broken() -> list[int]:
        raise RuntimeError("broker away")

    hooks.register(part=test_part, sweep_work=broken)
    hooks.register(part=f"{test_part}-2", sweep_work=lambda: [42])
    # when the sweeper runs, then the failure is logged, not raised, and the others' work is reported
    assert market_sweep().requeued == [*experiment_requeue(), 42]


def test_every_quote_leaves_free_what_any_part_promised(market, test_part: str) -> None:
    # given a part that promised 3 map units over [100, 400) s of simulated time
    from marketplace.deadlines.services import reserved_units
    from marketplace.market.models.queues import ResourceType
    from marketplace.reservations.adapters import era_settings, origin_slot, promised_slots

    types = list(ResourceType.objects.filter(market=market))
    map_column = [t.name for t in types].index("map")
    hooks.register(part=test_part, promise_source=lambda m, ts, start, end: [(map_column, 3, 100.0, 400.0)])
    # then a deadline quote over [0, 200) sees the 3 units held (paper 003) ...
    held = reserved_units(market=market, types=types, start=0.0, end=200.0)
    assert held[map_column] == 3 and held.sum() == 3
    # ... and ERA's price curve counts them in the slots the window covers (paper 001), nowhere else
    s = era_settings(market)
    promised = promised_slots(market, types[map_column], s, origin_slot(market.sim_time, s.slot_seconds))
    slot = s.slot_seconds
    covered = [k for k in range(len(promised)) if k * slot < 400.0 and (k + 1) * slot > 100.0]
    assert promised[covered].tolist() == [3] * len(covered)
    assert promised.sum() == 3 * len(covered)
