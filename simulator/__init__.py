"""Discrete-event cluster simulator: pure Python and numpy, no Django.

    engine      -- the event heap, (time, priority, sequence, payload)
    records     -- JobSpec, JobFinished, FairnessSample, AdvanceReport
    cluster/    -- the cluster model (model) over its state and queries (core), its dispatch stages
                   (stages, lookahead) and what they see of it (view), how a Plan is applied
                   (plan_apply, reservations), configuration changes (reconfigure), saved state
                   (state), job counters (jobs), within-leaf dispatch (placement), fairness
                   accounting, and why a job waits (waiting)
    market/     -- MarketEngine: the one market step of the live market and offline runs (engine),
                   its records, and the price preview
    integrals   -- the shares in force per job and their time integrals
    workloads/  -- trace loaders (SWIM TSV, Standard Workload Format) and synthetic workloads
    runner      -- offline what-if runs re-clearing the market on every arrival and departure
    metrics, outcomes -- response times, utilisation, fairness series; deadlines met and welfare
    cura/, era/, deadline/ -- each mechanism's own simulation pieces (workloads, live drivers)
    whatif/     -- the simulation lab's runs and their comparison
    experiments/ -- the papers' experiments, one module or package per paper, registered by name
"""
