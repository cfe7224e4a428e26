"""The lab's hook into the market's core (``market.hooks``): the sweeper publishes again the runs
whose publication failed while the broker was down (``experiment_requeue``)."""

from __future__ import annotations

from marketplace.lab.services.experiments import experiment_requeue
from marketplace.market import hooks


def register() -> None:
    hooks.register(part="lab", sweep_work=lambda: experiment_requeue())
