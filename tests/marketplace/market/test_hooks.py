"""The core's one plug-in surface (``market.hooks.MarketPart``): the clearing, the tick, the sweeper and
the quotes call the parts of ``MARKET_PARTS`` in that order, and each part overrides exactly what the core
used to call by name (README, "Layout")."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.lab.services.experiments import experiment_requeue
from marketplace.market import hooks
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.market import Market
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.config import market_part_arguments_set
from marketplace.market.services.sweeper import market_sweep
from scheduler.plan import Plan

WORK = [WorkItem("map", 4, 10.0, 1.0)]
HOOK_NAMES = [n for n, v in vars(hooks.MarketPart).items() if callable(v) and not n.startswith("_")]


class _Part(hooks.MarketPart):
    """A part built by a test from plain functions (each hook optional)."""

    name = "test-part"

    def __init__(self, name: str = "test-part", **overrides: Callable[..., Any]) -> None:
        self.name = name  # type: ignore[misc]
        for hook, fn in overrides.items():
            setattr(self, hook, fn)


@pytest.fixture
def plug(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Add parts after the configured ones for one test (the loaded parts are process-wide)."""

    def add(*extra: hooks.MarketPart) -> None:
        monkeypatch.setattr(hooks, "_PARTS", (*hooks.parts(), *extra))

    return add


def test_the_configured_parts_are_loaded_in_the_setting_s_order(settings) -> None:
    # given the app registry is ready (pytest-django set it up)
    # then each configured part is loaded once, in MARKET_PARTS order, by its name
    loaded = hooks.parts()
    assert [type(p).__module__ + "." + type(p).__qualname__ for p in loaded] == list(settings.MARKET_PARTS)
    assert [p.name for p in loaded] == ["reservations", "deadlines", "pools", "lab", "ledger", "dashboard"]
    # and each overrides exactly the hooks the core used to call by name
    def overridden(p: hooks.MarketPart) -> set[str]:
        return {h for h in HOOK_NAMES if getattr(type(p), h) is not getattr(hooks.MarketPart, h)}

    by_name = {p.name: overridden(p) for p in loaded}
    assert by_name["reservations"] == {"clearing_exclusions", "fixed_price_jobs", "engine_sync", "promises", "price_curve",
                                       "price_points"}
    assert by_name["deadlines"] == {"fixed_price_jobs", "promises", "price_points"}
    assert by_name["pools"] == {"tick_work", "price_points", "tenant_jobs", "ledger_jobs"}
    assert by_name["lab"] == {"sweep_work"}
    assert by_name["ledger"] == {"sweep_work"}  # expired idempotency keys are purged by the sweeper
    assert by_name["dashboard"] == {"after_tick"}  # the figures computed after a tick while someone watches
    assert set(HOOK_NAMES) == {"clearing_exclusions", "fixed_price_jobs", "engine_sync", "before_tick", "engine_report",
                               "engine_stepped", "tick_work", "after_tick", "sweep_work", "executions", "promises", "price_curve",
                               "price_points", "tenant_jobs", "ledger_jobs"}


def test_a_part_that_is_not_a_market_part_is_refused_at_load(settings) -> None:
    settings.MARKET_PARTS = [*settings.MARKET_PARTS, "marketplace.market.services.clearing.market_clear"]
    try:
        with pytest.raises(TypeError, match="not a named MarketPart"):
            hooks.reload_parts()
    finally:
        settings.MARKET_PARTS = settings.MARKET_PARTS[:-1]
        hooks.reload_parts()


def test_the_first_part_in_the_setting_that_prices_slots_gives_the_market_s_curve(market, plug) -> None:
    # given a part after ERA that also prices slots
    other = (np.array([0.0]), np.array([[7.0]]))
    plug(_Part(price_curve=lambda m, types, start, end: other))
    types = list(market.resource_types.all())
    # then ERA's curve wins (it comes first in MARKET_PARTS) ...
    era = hooks.price_curve(market, types, 0.0, 600.0)
    assert era is not None and era is not other
    # ... and with the order reversed, the other part's does: the setting decides, not import order
    plug()  # reset to the configured ones plus nothing
    hooks._PARTS = (_Part(price_curve=lambda m, types, start, end: other), *hooks.parts())
    assert hooks.price_curve(market, types, 0.0, 600.0) is other


def test_a_part_s_arguments_live_with_the_part_and_are_audited(market, plug, admin_user) -> None:
    # given a part with its own settings (no column of the core's Market)
    @dataclasses.dataclass(frozen=True)
    class Args:
        retries: int = dataclasses.field(default=3, metadata={"min": 0, "max": 10})
        commands: tuple[str, ...] = ("sleep",)

    class WithArgs(hooks.MarketPart):
        name = "with-args"
        arguments = Args

    plug(WithArgs())
    assert hooks.part_arguments(market, "with-args") == Args()
    # when staff change one, with a bad value for the other
    with pytest.raises(ValidationError) as bad:
        market_part_arguments_set(market=market, part="with-args", values={"retries": 11, "commands": ["sleep"]}, user=admin_user)
    assert set(bad.value.message_dict) == {"retries"}
    version = Market.objects.get(pk=market.pk).state_version
    changes = market_part_arguments_set(market=market, part="with-args", values={"retries": 5}, user=admin_user)
    # then the stored value is read back typed, the change is audited and the market re-clears
    market.refresh_from_db()
    assert hooks.part_arguments(market, "with-args") == Args(retries=5)
    assert [(c.field, c.old_value, c.new_value) for c in changes] == [("with-args.retries", "3", "5")]
    assert market.state_version > version
    # and booleans, non-finite numbers and unknown names are field errors
    for values in ({"retries": True}, {"retries": float("nan")}, {"nope": 1}):
        with pytest.raises(ValidationError):
            market_part_arguments_set(market=market, part="with-args", values=values)


def test_a_clearing_leaves_out_the_jobs_a_part_serves_itself(market, alice, plug) -> None:
    # given two bids, one of which a part claims
    kept = bid_submit(tenant=alice, budget="100", work=WORK)
    claimed = bid_submit(tenant=alice, budget="100", work=WORK)
    seen: list[list[int]] = []

    def claim(job_ids: list[int]) -> set[int]:
        seen.append(job_ids)
        return {claimed.pk} & set(job_ids)

    plug(_Part(clearing_exclusions=claim))
    # when the market clears
    result = market_clear(market_id=market.pk)
    # then the part was asked about the new jobs, and the claimed one is not in the Plan
    assert result.status == "cleared" and seen and claimed.pk in seen[-1]
    plan = Plan.from_bytes(bytes(AllocationSnapshot.objects.get(pk=result.snapshot_id).plan))
    assert kept.pk in plan.job_ids.tolist() and claimed.pk not in plan.job_ids.tolist()


def test_a_tick_runs_the_parts_sync_and_work_on_its_clock(market, alice, plug) -> None:
    # given a part with a sync and a tick's work that record the clock
    bid_submit(tenant=alice, budget="100", work=WORK)
    synced: list[float] = []
    worked: list[float] = []
    plug(_Part(engine_sync=lambda m, engine, types: synced.append(engine.now), tick_work=lambda m: worked.append(m.sim_time)))
    # when the clock advances 5 simulated seconds
    cluster_advance(market_id=market.pk, seconds=5.0)
    # then the part synced the engine before the steps and worked after them, at the new time
    assert synced == [0.0]
    assert worked and worked[-1] == pytest.approx(5.0)


def test_the_sweeper_runs_the_parts_work_and_survives_a_failing_part(market, plug) -> None:
    # given a part whose sweep work fails, and one after it that publishes run 42
    def broken() -> list[int]:
        raise RuntimeError("broker away")

    plug(_Part(sweep_work=broken), _Part("test-part-2", sweep_work=lambda: [42]))
    # when the sweeper runs, then the failure is logged, not raised, and the others' work is reported
    assert market_sweep().requeued == [*experiment_requeue(), 42]


def test_every_quote_leaves_free_what_any_part_promised(market, plug) -> None:
    # given a part that promised 3 map units over [100, 400) s of simulated time
    from marketplace.deadlines.services import reserved_units
    from marketplace.market.models.queues import ResourceType
    from marketplace.reservations.adapters import era_settings, origin_slot, promised_slots

    types = list(ResourceType.objects.filter(market=market))
    map_column = [t.name for t in types].index("map")
    plug(_Part(promises=lambda m, ts, start, end: [hooks.Promise(map_column, 3, 100.0, 400.0)]))
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
