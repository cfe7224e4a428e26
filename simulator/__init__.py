"""Discrete-event cluster simulator: pure Python and numpy, no Django.

Modules:
    engine      -- the event heap, (time, priority, sequence, payload)
    workload    -- trace loaders (SWIM TSV, Standard Workload Format)
    records     -- JobSpec, JobFinished, FairnessSample, AdvanceReport
    market      -- MarketEngine: the one market step of the live market and offline runs
    cluster     -- the cluster model; its dispatch stages (stages), how a Plan is
                   applied (plan_apply), configuration changes (reconfigure) and
                   saved state (cluster_state)
    jobs, placement, accounting, integrals -- the cluster's job counters,
                   within-leaf dispatch, fairness and share integrals
    runner      -- offline what-if runs re-clearing the market on every
                   arrival and departure
    metrics     -- response times, utilisation, fairness series
"""
