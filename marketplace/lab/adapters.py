"""The lab's part of the ORM <-> simulator seam (``market.adapters`` holds the rest): the live
market's recent jobs as a jobs document the simulation lab replays."""

from __future__ import annotations

import math
from typing import Any

from marketplace.market.adapters import job_specs, queue_tree, resource_types
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market


def live_workload(*, market: Market, since: float) -> dict[str, Any]:
    """The market's jobs submitted at simulated time >= ``since`` as a jobs document for the
    simulation lab (``simulator.whatif.run.load_jobs_doc``): the queue tree, capacities and each
    job's bid as placed, its SLO included (as ``market.adapters.offline_replay`` replays them), plus ``live``: what the
    market did with them (per finished job its response time, simulated s; the revenue).
    """
    ids = list(Job.objects.filter(market=market, sim_submit_time__gte=since).order_by("pk").values_list("pk", flat=True))
    tree_map = queue_tree(market)
    types = resource_types(market)
    names = tree_map.tree.leaf_names
    jobs = [
        {"job_id": spec.job_id, "submit_time": spec.submit_time, "leaf": names[spec.leaf], "tasks": list(spec.tasks),
         "task_duration": list(spec.task_duration), "budget": bid.budget, "weights": list(bid.weights), "utility": bid.utility,
         "min_utility": bid.min_utility}
        for spec, bid in job_specs(ids, types, tree_map, now=-math.inf)
    ]  # fmt: skip
    rows = Job.objects.filter(pk__in=ids).values_list("pk", "sim_submit_time", "sim_finish_time", "charged")
    response = {str(pk): f - s for pk, s, f, _ in rows if f is not None}
    tree = tree_map.tree
    live = {"since": since, "until": market.sim_time, "jobs": len(ids), "finished": len(response), "response_s": response,
            "revenue": float(sum(c for *_, c in rows))}  # fmt: skip
    return {
        "tree": {"names": list(tree.names), "parent": list(tree.parent), "weight": list(tree.weight)},
        "capacity": [t.capacity for t in types],
        "types": [t.name for t in types],
        "jobs": jobs,
        "live": live,
    }
