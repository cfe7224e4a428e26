"""The ledger's integrals, cut by cut, equal ``usage + running * dt`` and
``entitled + np.minimum(running + eligible, S) * dt`` on numpy count arrays, bit for bit,
whatever the order of count changes, cuts and share changes (ties of demand and share,
signed zeros and a NaN share included)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.cluster.accounting import LeafLedger

L, M = 3, 2

shares = st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, 1e-300, 7.0 / 3.0, float("nan")]),
                  min_size=L * M, max_size=L * M)
program = st.lists(st.one_of(
    st.tuples(st.just("run"), st.integers(0, L - 1), st.integers(0, M - 1), st.integers(-2, 3)),
    st.tuples(st.just("elig"), st.integers(0, L - 1), st.integers(0, M - 1), st.integers(-2, 3)),
    st.tuples(st.just("start"), st.integers(0, L - 1), st.integers(0, M - 1), st.integers(-2, 3)),
    st.tuples(st.just("cut"), st.sampled_from([0.0, 0.1, 1.0, 1e-9, 3.7, -1.0])),
    st.tuples(st.just("share"), shares),
    st.tuples(st.just("read"), st.sampled_from([0.0, 0.5, 2.0])),
), max_size=60)


def bits(a: np.ndarray) -> list[str]:
    return [float(x).hex() for x in a.ravel().tolist()]


@settings(max_examples=300, deadline=None)
@given(program, shares)
def test_ledger_integrals_equal_the_array_formula(steps: list[tuple], first: list[float]) -> None:
    ledger = LeafLedger(L, M, 0.0)
    share = np.array(first).reshape(L, M)
    running, eligible = np.zeros((L, M), dtype=np.int64), np.zeros((L, M), dtype=np.int64)
    usage, entitled, mark = np.zeros((L, M)), np.zeros((L, M)), 0.0
    for step in steps:
        if step[0] == "run":
            ledger.add_running(step[1], step[2], step[3])
            running[step[1], step[2]] += step[3]
        elif step[0] == "elig":
            ledger.add_eligible(step[1], step[2], step[3])
            eligible[step[1], step[2]] += step[3]
        elif step[0] == "start":  # eligible tasks start: add_eligible(-units) then add_running(units), in one step
            ledger.start_units(step[1], step[2], step[3])
            eligible[step[1], step[2]] -= step[3]
            running[step[1], step[2]] += step[3]
        elif step[0] == "share":
            share = np.array(step[1]).reshape(L, M)  # a new matrix, as the cluster makes one
        elif step[0] == "cut":
            t = mark + step[1]
            ledger.integrate_to(t, share)
            if t - mark > 0:
                usage, entitled = usage + running * (t - mark), entitled + np.minimum(running + eligible, share) * (t - mark)
            mark = max(mark, t)
        else:
            got_u, got_e = ledger._at(mark + step[1], share)
            dt = (mark + step[1]) - mark
            want_u = usage + running * dt if dt > 0 else usage
            want_e = entitled + np.minimum(running + eligible, share) * dt if dt > 0 else entitled
            assert bits(got_u) == bits(want_u) and bits(got_e) == bits(want_e)
        assert bits(ledger.usage) == bits(usage) and bits(ledger.entitled) == bits(entitled) and ledger.mark == mark
        assert (ledger.running == running).all() and (ledger.eligible == eligible).all()
        assert (ledger.demand() == running + eligible).all()
