"""The engine's state in parts (``simulator.market.delta``): the parts put back together are the whole
state, and a store after a step writes the records of the jobs that changed and no others."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Reservation
from simulator.market import delta
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec

TREE = QueueTree.from_paths({"root.a": 2.0, "root.b": 1.0, "root.c": 1.0})


def _json(x: Any) -> Any:
    return json.loads(json.dumps(x))


def _stored(parts: delta.Parts, records: dict[int, list[Any]]) -> tuple[dict[str, Any], bytes, dict[int, list[Any]]]:
    """What a store of ``parts`` over ``records`` (the earlier stores) leaves, through JSON."""
    kept = {k: v for k, v in records.items() if k not in parts.gone}
    kept.update({k: _json(v) for k, v in parts.records.items()})
    return _json(parts.header), bytes(parts.columns), kept


def _market(dispatch: str, seed: int = 0) -> MarketEngine:
    e = MarketEngine.create([6, 3], TREE, MarketConfig(dispatch=dispatch, t_wait=5.0), seed=seed, sample_interval=30.0)
    rng = np.random.default_rng(seed)
    for k in range(30):
        e.submit(JobSpec(k, k % 3, (int(rng.integers(1, 9)), int(rng.integers(0, 4))), (3.0 + k % 5, 6.0), float(k)),
                 Bid(10.0 + k, (1.0, 0.5), min_utility=0.1 if k % 4 == 0 else None))
    e.book(Reservation(29, 0, 1, 50.0, 90.0), 12.0)
    return e


@pytest.mark.parametrize("dispatch", ["stride", "lottery", "fifo"])
def test_the_parts_stored_step_by_step_are_the_whole_state(dispatch: str) -> None:
    e = _market(dispatch)
    parts = delta.split(e, None)
    header, columns, records = _stored(parts, {})
    assert set(records) == set(e.known_jobs()) | set(e.cluster.known_jobs())
    marks = parts.marks
    written = []
    for until in (5.0, 12.0, 20.0, 40.0, 80.0, math.inf):
        e.clear()
        e.step(until, stop_on_departure=until < math.inf)
        parts = delta.split(e, marks)
        header, columns, records = _stored(parts, records)
        marks = parts.marks
        written.append(len(parts.records))
        assert delta.join(header, columns, records) == _json(e.to_state())
        assert set(records) == set(marks)
    assert set(records) == set(e.known_jobs()) | set(e.cluster.known_jobs())
    assert len(records) < 30  # the departed jobs' records are gone
    assert min(written) > 0 and max(written) < 30  # a step rewrites the jobs it moved, not all of them


def test_an_engine_restored_from_parts_continues_as_the_one_that_ran_on() -> None:
    def departures(restore: bool) -> list[tuple[int, float]]:
        e = _market("stride", seed=3)
        marks: dict[int, Any] | None = None
        records: dict[int, list[Any]] = {}
        out = []
        for until in (10.0, 25.0, 60.0, math.inf):
            e.clear()
            out += [(d.job_id, d.finish_time) for d in e.step(until).departures]
            parts = delta.split(e, marks)
            header, columns, records = _stored(parts, records)
            marks = parts.marks
            if restore:
                e = MarketEngine.from_state(TREE, delta.join(header, columns, records))
                marks = delta.marks_of(e)
        return out

    assert departures(restore=True) == departures(restore=False)


def test_an_unchanged_engine_writes_no_record_and_a_missing_one_is_an_error() -> None:
    e = _market("stride")
    e.clear()
    e.step(10.0)
    first = delta.split(e, None)
    again = delta.split(e, first.marks)
    assert again.records == {} and again.gone == []
    header, columns, records = _stored(first, {})
    records.pop(next(iter(records)))
    with pytest.raises(ValueError, match="no record"):
        delta.join(header, columns, records)
    with pytest.raises(ValueError, match="bytes stored"):
        delta.join(header, columns[:-8], _stored(first, {})[2])
