"""Paper 003's experiment core (Sec. 5): tasks, the FCFS cluster, DER and Jain's index."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.deadline.der import TABLE_1, der_experiment, der_shares, jain_index, paper_tasks, run_case, serial_fraction


def test_jain_index() -> None:
    assert jain_index(np.array([0.7, 0.7, 0.7])) == pytest.approx(1.0)
    assert jain_index(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)
    x = np.random.default_rng(0).uniform(0.5, 2.0, 50)
    assert 1 / 50 <= jain_index(x) <= 1.0


BETA = {"uniform": 1.3, "eq23": 1.0 + 3.5 * serial_fraction(0.7), "exact": 1.0}


def test_tasks_follow_the_papers_set_up() -> None:
    loads = {v for values in TABLE_1.values() for v in values}
    for model, beta in BETA.items():
        for t in paper_tasks(200, np.random.default_rng(1), model=model):
            cores = np.full(3, 8.0)
            for r in (np.ones(3), cores):  # Definition 2 on every allocation from 1 to 8 cores
                ratio = t.estimate[t.real > 0] / t.work(r)[t.real > 0]
                assert np.all((ratio >= 0.7 - 1e-12) & (ratio <= beta + 1e-12))
            t1 = t.estimate.sum()  # "the estimated execution time when running the task on a particular core"
            assert t1 / 8 <= t.deadline <= t1
            assert t.real.sum() >= 3 * min(loads)
    eq23 = paper_tasks(50, np.random.default_rng(2))[0]
    ratio = eq23.estimate / eq23.work(np.full(3, 8.0))
    assert np.allclose(ratio[eq23.real > 0], 0.7)  # Eq. 23's lowest ratio, at 8 cores, is the paper's alpha


@pytest.mark.parametrize("model", ["eq23", "uniform"])
@pytest.mark.parametrize("seed", range(5))
def test_stricter_deadline_meets_every_deadline_under_sufficient_supply(seed: int, model: str) -> None:
    # Theorem 4 + Eq. 22: with capacity to spare, planning with D' = alpha D keeps every
    # DER in [alpha / beta, 1]; planning with D keeps it in [1 / beta, 1 / alpha].
    # (for tasks a whole node can finish by D', Lemma 1's condition; the others cannot be helped)
    tasks = paper_tasks(8, np.random.default_rng(seed), model=model)
    fits = np.array([t.estimate.sum() / 8.0 <= 0.7 * t.deadline for t in tasks])
    strict = run_case(tasks, planning=0.7, nodes=10, cores=8.0)[fits]
    assert np.all(strict <= 1.0 + 1e-9) and np.all(strict >= 0.7 / BETA[model] - 1e-9)
    nominal = run_case(tasks, planning=1.0, nodes=10, cores=8.0)[fits]
    assert np.all(nominal >= 1 / BETA[model] - 1e-9) and np.all(nominal <= 1 / 0.7 + 1e-9)
    assert fits.sum() >= 4


def test_competition_stretches_the_tail_and_lowers_fairness() -> None:
    r = der_experiment(levels=[5, 40], seed=3)
    for rule in ("D", "D'"):
        assert r.high[rule][1] >= r.high[rule][0]
        assert r.jain[rule][1] <= r.jain[rule][0] + 1e-12
        assert r.at_max[rule].shape == (40,)
    assert r.mean["D'"][0] < r.mean["D"][0]  # the stricter plan finishes earlier
    shares = der_shares(r.at_max["D"])
    assert 0 <= shares["late_within_1.05"] <= shares["late"] <= 1


def test_the_experiment_is_deterministic() -> None:
    a, b = der_experiment(levels=[3, 7], seed=5), der_experiment(levels=[3, 7], seed=5)
    for rule in ("D", "D'"):
        assert np.array_equal(a.mean[rule], b.mean[rule]) and np.array_equal(a.at_max[rule], b.at_max[rule])


def test_registered_experiment_runs_and_reports_beside_the_paper() -> None:
    from simulator import experiments
    from simulator.experiments.fidelity import VERDICTS

    result = experiments.run("paper003_der", {"max_tasks": 6, "seeds": [1, 2, 3, 4, 5]})
    assert [f["layout"]["title"]["text"][:6] for f in result["figures"]] == ["Fig. 4", "Fig. 4", "Fig. 5", "Fig. 6"]
    heads, setup, isolation, waiting, per_level = result["tables"]
    # the error model is the one closest to Fig. 4a by the page's rule; the others are sensitivity rows
    fits = {row[0].split(" ")[0]: float(row[0].split("fit error ")[1].rstrip(")")) for row in isolation["rows"][:3]}
    chosen = isolation["rows"][0][0].split(" ")[0]
    assert "chosen by the Fig. 4a fit" in isolation["rows"][0][0] and set(fits) == {"eq23", "uniform", "exact"}
    assert fits[chosen] == min(fits.values())
    assert any(row[1].startswith(f"paper silent; chosen: {chosen}") for row in setup["rows"])
    assert len(per_level["rows"]) == 6 and len(isolation["rows"]) == 4  # chosen, two sensitivity models, a node per task
    assert [row[0].split(",")[0] for row in waiting["rows"]] == ["look ahead", "start at once on the fastest node", "look ahead"]
    assert len(result["headlines"]) == len(heads["rows"]) == 9
    assert all(h["verdict"] in VERDICTS for h in result["headlines"])
    assert "paper: 20 % at m = 40" in result["summary"]
    with pytest.raises(TypeError):
        experiments.run("paper003_der", {"max_tasks": "many"})


def test_a_task_that_cannot_make_it_waits_when_waiting_finishes_it_sooner() -> None:
    from simulator.deadline.der import MatrixTask

    # One node of 8 units. A takes 7 units for 10 s; B then needs 8 units to make its deadline.
    # On the 1 unit left B would take 80 s; waiting for A's 8 units it finishes at 10 + 10 s.
    a = MatrixTask(np.array([70.0, 0.0, 0.0]), np.array([70.0, 0.0, 0.0]), 10.0)
    b = MatrixTask(np.array([80.0, 0.0, 0.0]), np.array([80.0, 0.0, 0.0]), 10.0)
    der = run_case([a, b], planning=1.0, nodes=1, cores=8.0)
    assert der == pytest.approx([1.0, 2.0])
    # With a longer deadline B fits beside A at once (Alg. 1 on the leftover unit).
    c = MatrixTask(np.array([8.0, 0.0, 0.0]), np.array([8.0, 0.0, 0.0]), 10.0)
    assert run_case([a, c], planning=1.0, nodes=1, cores=8.0) == pytest.approx([1.0, 1.0])  # 0.8 unit for exactly D
