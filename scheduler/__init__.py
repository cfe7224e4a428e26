"""Pure mechanisms library: numpy/scipy and dataclasses in and out, no Django.

Modules:
    types      -- the snapshot a clearing is computed on
    plan       -- the Plan a clearing returns: reservations, shares, payment rules, diagnostics
    base       -- the Mechanism Protocol (snapshot -> Plan)
    registry   -- one registry per stage: mechanisms, fair-share policies, dispatch modes
    utility    -- utility functions of a bid and their marginals (paper 000, Sec. 3)
    abacus     -- Abacus budget auction (paper 000)
    fairness   -- the queue tree and the fairness metrics (paper 002, Eqs. 1-5)
    fairshare  -- MLRF / LTRF / H-LTRF long-term fair share (paper 002)
    unit_tasks -- the paper's discrete unit-task model (unit_task_schedule, Table 1, Fig. 2)
    fifo       -- FIFO across queues (the baseline)
    selection, running -- tie-breaking choice of a leaf; running-task bookkeeping
    quantum    -- adaptive time quantum per application and leaf (paper 002, Sec. 6.2.1)
    fairshare_limits -- history modes (rounds, decay), min / max shares, static quotas
    dispatch   -- turning shares into unit-by-unit task placement
"""
