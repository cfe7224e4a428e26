"""Saving and restoring the market engine (JSON-serialisable state, exact float round trip).

A live market keeps its engine on the market row between clock ticks; a restored engine continues
exactly as if it had never been saved. The cluster's own state is ``simulator.cluster.state``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from scheduler.fairshare.fairness import QueueTree
from scheduler.payments import PaymentRule
from scheduler.plan import Reservation
from simulator.cluster.jobs import inf_to_none, none_to_inf
from simulator.cluster.model import Cluster
from simulator.integrals import ShareIntegrals
from simulator.market.records import Bid, JobBooks, MarketConfig
from simulator.market.snapshot import BidColumns

STATE_FORMAT = 1


class Saved(Protocol):
    """What of a ``simulator.market.engine.MarketEngine`` its state holds (named here so this module
    does not import the engine back)."""

    config: MarketConfig
    cluster: Cluster
    plan_id: int | None
    _books: dict[int, JobBooks]
    _shares: ShareIntegrals
    _bids: BidColumns
    _booked: list[Reservation]
    _booked_price: dict[int, float]


def dump(engine: Saved) -> dict[str, Any]:
    """The engine's state: its configuration, each job's books (bid, rule, warm start, share integral),
    the bookings and their prices, the Plan in force and the cluster's state."""
    books = []
    shares = engine._shares
    for job_id, b in engine._books.items():
        share = shares.share(b.row)
        books.append([
            job_id, b.bid.budget, list(b.bid.weights), b.bid.utility, b.bid.min_utility,
            [b.rule.kind, b.rule.amount, b.rule.min_utility], b.arrival,
            None if (sub := shares.sub(b.row)) is None else sub.tolist(), None if share is None else share.tolist(),
            shares.area(b.row).tolist(), shares.mark(b.row), b.accepted,
        ])
    state = dump_header(engine)
    state["books"] = books
    state["cluster"] = engine.cluster.to_state()
    return state


def dump_header(engine: Saved) -> dict[str, Any]:
    """What of :func:`dump`'s state does not grow with the jobs: the format, the configuration,
    the bookings and their prices and the Plan in force (no books, no cluster)."""
    c = engine.config
    return {
        "format": STATE_FORMAT,
        "config": [
            c.mechanism, c.fairshare, c.dispatch, c.alpha, c.tol, c.max_rounds, inf_to_none(c.t_wait), c.history,
            inf_to_none(c.history_length),
        ],
        "booked": [r.to_list() for r in engine._booked],
        "booked_prices": [[job, price] for job, price in engine._booked_price.items()],
        "plan_id": engine.plan_id,
    }


def config_and_cluster(tree: QueueTree, state: Mapping[str, Any]) -> tuple[MarketConfig, Cluster]:
    """The saved configuration and cluster, on ``tree``.

    Raises:
        ValueError: unknown format, or a tree that does not match.
    """
    if state.get("format") != STATE_FORMAT:
        raise ValueError(f"unknown market engine state format {state.get('format')!r}")
    mech, fair, disp, alpha, tol, rounds, t_wait, *history = state["config"]
    history_mode, length = history if history else ("forever", None)
    config = MarketConfig(
        mech, fair, disp, float(alpha), float(tol), int(rounds), none_to_inf(t_wait), history_mode, none_to_inf(length)
    )
    return config, Cluster.from_state(tree, state["cluster"])


def restore(engine: Saved, state: Mapping[str, Any]) -> None:
    """Load the books, bookings and Plan id of ``state`` into ``engine`` (built on its config and cluster)."""
    for row in state["books"]:
        job_id, budget, weights, utility, slo, (kind, amount, mu), arrival, sub, share, area, mark, accepted = row
        integral = engine._shares.add(float(mark))
        engine._shares.load(integral, share, area, float(mark), sub)
        bid = Bid(float(budget), tuple(float(w) for w in weights), utility, slo)
        engine._books[int(job_id)] = JobBooks(bid, PaymentRule(kind, float(amount), mu), float(arrival), integral, bool(accepted))
        engine._bids.put(int(job_id), integral, bid)
    engine._booked = [Reservation.from_list(row) for row in state["booked"]]
    engine._booked_price = {int(job): float(price) for job, price in state.get("booked_prices", [])}
    engine.plan_id = state["plan_id"]
