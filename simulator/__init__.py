"""Discrete-event cluster simulator: pure Python and numpy, no Django.

Modules:
    engine      -- the event heap, (time, priority, sequence, payload)
    workload    -- trace loaders (SWIM TSV, Standard Workload Format)
    records     -- JobSpec, JobFinished, FairnessSample, AdvanceReport
    cluster     -- the cluster model shared by the live market and offline runs
    jobs, placement, accounting -- the cluster's job counters, within-leaf
                   dispatch and fairness integrals
    runner      -- offline what-if runs re-clearing the market on every
                   arrival and departure
    metrics     -- response times, utilisation, fairness series
"""
