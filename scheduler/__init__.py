"""Pure mechanisms library: numpy/scipy and dataclasses in and out, no Django.

Shared by every mechanism:
    types      -- the snapshot a clearing is computed on
    plan       -- the Plan a clearing returns: reservations, shares, payment rules, diagnostics
    base       -- the Mechanism Protocol (snapshot -> Plan)
    registry   -- one registry per stage: mechanisms, fair-share policies, dispatch modes
    dispatch   -- turning shares into unit-by-unit task placement

One package per paper:
    abacus/    -- Abacus budget auction (paper 000): auction, its steps, KKT read-outs, Newton and
                  price solves, the SLO pool, utility functions and their fit
    era/       -- ERA reservations (paper 001): mechanisms, demand predictors, the flow LP
    fairshare/ -- long-term fair share (paper 002): the queue tree and metrics (fairness), MLRF /
                  LTRF / H-LTRF (allocator), limits, FIFO, quanta, the unit-task model
    deadline/  -- deadline quotes at minimum payment (paper 003): payment, whole slots
    cura/      -- Cura's VM-aware scheduler and pool manager (paper 004)
"""
