"""Pure mechanisms library: numpy/scipy and dataclasses in and out, no Django.

Modules:
    types      -- snapshot and outcome dataclasses shared by every policy
    base       -- the allocation-policy Protocol
    registry   -- policies chosen by name
    abacus     -- Abacus budget auction (paper 000)
    fairshare  -- MLRF / LTRF / H-LTRF long-term fair share (paper 002)
    dispatch   -- turning shares into unit-by-unit task placement
"""
