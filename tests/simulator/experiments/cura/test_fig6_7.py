"""Cura Figs. 6-7 and the reconfiguration's beta (paper 004, Secs. III-B, IV-B 2-3)."""

from __future__ import annotations

import pytest

from simulator.cura.workload import ALL_SIZE_BYTES, generate, job_classes
from simulator.experiments.cura.fig5 import TRACE
from simulator.experiments.cura.fig6_7 import COMMON, _per_job_needed


def test_size_categories_give_only_that_size_and_the_default_draw_is_unchanged() -> None:
    classes = job_classes(TRACE, n=10, seed=0)
    default = generate(classes, jobs=30, span=60.0, seed=1)
    again = generate(classes, jobs=30, span=60.0, seed=1)
    assert [j.job_class for j in default] == [j.job_class for j in again]
    xl = generate(classes, jobs=30, span=60.0, seed=1, categories=("xlarge",))
    assert {j.job_class % len(ALL_SIZE_BYTES) for j in xl} == {list(ALL_SIZE_BYTES).index("xlarge")}
    assert min(j.runtime.min() for j in xl) > max(j.runtime.min() for j in default)  # 100 GB runs longer than <= 10 GB
    with pytest.raises(ValueError, match="categories"):
        generate(classes, jobs=3, span=10.0, categories=("huge",))


@pytest.mark.parametrize("seed", range(5))
def test_per_job_clusters_need_more_servers_when_vms_boot_longer(seed: int) -> None:
    classes = job_classes(TRACE, n=10, seed=seed)
    jobs = generate(classes, jobs=40, span=30.0, seed=seed, max_deadline=200.0)
    quick, slow = _per_job_needed(jobs, COMMON, 0.0), _per_job_needed(jobs, COMMON, 120.0)
    assert quick <= slow  # a VM that boots longer holds its cores longer (and may miss deadlines)
