"""ShareRows (the Plan's within-leaf shares as one matrix) answers as the job id -> row mapping it replaced."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.cluster.placement import ShareRows


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 30), m=st.integers(1, 3), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_share_rows_answer_as_a_mapping_of_job_ids_to_rows(n, m, seed, data):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    ids = [int(x) for x in rng.choice(10_000, size=n, replace=False)]
    matrix = rng.random((n, m))
    rows = ShareRows(list(ids), matrix.copy())
    oracle = {job: matrix[k].copy() for k, job in enumerate(ids)}
    for job in data.draw(st.lists(st.sampled_from(ids), max_size=n)) if ids else []:
        rows.drop(job)
        oracle.pop(job, None)
    asked = [*data.draw(st.lists(st.sampled_from(ids) if ids else st.integers(0, 10), max_size=12)), 10_001, 10_002]
    for j in range(m):
        expected = [oracle[i][j] if i in oracle else 0.0 for i in asked]
        assert rows.column(asked, j).tolist() == expected
    assert [(job, vec.tolist()) for job, vec in rows.items()] == [(job, vec.tolist()) for job, vec in oracle.items()]
    array = rows.array()
    assert array.shape == (len(oracle), 1 + m) and len(rows) == len(oracle)
    assert array[:, 0].tolist() == [float(job) for job in oracle]
    assert array[:, 1:].tolist() == [vec.tolist() for vec in oracle.values()]
    for job in ids:
        got = rows.get(job)
        assert (got is None) == (job not in oracle) and (got is None or got.tolist() == oracle[job].tolist())
    assert ShareRows.of(oracle, m).array().tolist() == array.tolist()
