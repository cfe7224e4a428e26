"""The lab's part of the market's core (``market.hooks.MarketPart``): the sweeper publishes again the
runs whose publication failed while the broker was down (``experiment_requeue``), the upload checks
that never reached a worker, and deletes orphaned uploads now and then (``services.uploads``)."""

from __future__ import annotations

from marketplace.lab.services.experiments import experiment_requeue
from marketplace.lab.services.simulations import simulation_check_requeue
from marketplace.lab.services.uploads import upkeep_due, upload_sweep
from marketplace.market.hooks import MarketPart


class LabPart(MarketPart):
    """Experiments and simulation studies on workers."""

    name = "lab"

    def sweep_work(self) -> list[int]:
        done = experiment_requeue()
        if upkeep_due():  # every few minutes, not every sweep
            upload_sweep()
            done += simulation_check_requeue()
        return done
