"""The experiments registry: the parameter contract, result checks, and the FB-2009 what-if."""

from __future__ import annotations

import json

import pytest

from simulator import experiments
from simulator.experiments import Experiment, figure, table


def _echo(params: experiments.Params, progress: experiments.Progress) -> experiments.Result:
    progress(0.5, "half")
    return {"figures": [], "tables": [table("t", ["k", "v"], [[k, json.dumps(v)] for k, v in params.items()])], "summary": "ok"}


ECHO = Experiment(
    name="echo_contract", title="echo", source="test", run=_echo, defaults={"n": 3, "x": 0.5, "names": ["a"], "flag": False, "label": "z"}
)


def test_params_overlay_defaults_and_reject_unknown_keys_and_wrong_types() -> None:
    assert ECHO.params({"n": 5}) == {"n": 5, "x": 0.5, "names": ["a"], "flag": False, "label": "z"}
    assert ECHO.params({"x": 2})["x"] == 2  # an int where a float is expected is a number
    with pytest.raises(ValueError, match="not a parameter"):
        ECHO.params({"m": 1})
    with pytest.raises(TypeError, match="expected a number"):
        ECHO.params({"n": "5"})
    with pytest.raises(TypeError, match="expected a list"):
        ECHO.params({"names": "a"})
    with pytest.raises(TypeError, match="expected a bool"):
        ECHO.params({"flag": 1})
    with pytest.raises(ValueError, match="finite"):
        ECHO.params({"x": float("inf")})


def test_names_must_be_identifiers() -> None:
    with pytest.raises(ValueError):
        Experiment(name="Bad Name", title="", source="", run=_echo, defaults={})


def test_registering_a_different_function_under_a_taken_name_fails() -> None:
    experiments.register(ECHO)
    experiments.register(ECHO)  # the same one again is harmless (module re-import)
    with pytest.raises(ValueError, match="twice"):
        experiments.register(Experiment(name="echo_contract", title="", source="", run=lambda p, q: {}, defaults={}))


def test_check_result_rejects_ragged_tables_oversized_traces_and_nan() -> None:
    experiments.check_result({"tables": [table("ok", ["a", "b"], [[1, 2]])]})
    with pytest.raises(ValueError, match="2 cells"):
        experiments.check_result({"tables": [table("bad", ["a", "b"], [[1]])]})
    big = figure("big", [{"x": list(range(experiments.MAX_POINTS_PER_TRACE + 1)), "y": []}], x_title="", y_title="")
    with pytest.raises(ValueError, match="downsample"):
        experiments.check_result({"figures": [big]})
    with pytest.raises(ValueError):
        experiments.check_result({"summary": float("nan")})


def _squares(params: experiments.Params, progress: experiments.Progress) -> experiments.Result:
    picked = [params["values"][params["part"]]] if params["part"] >= 0 else params["values"]
    return {"rows": [[v, v * v] for v in picked]}


SPLIT = Experiment(
    name="split_contract", title="split", source="test", run=_squares, defaults={"values": [1, 2, 3], "part": -1, "scale": 1},
    shards=lambda p: [{**p, "part": k, "scale": 1} for k in range(len(p["values"]))],
    combine=lambda p, parts: {"rows": [r for part in parts for r in part["rows"]]},
)


@pytest.mark.parametrize(("name", "given", "parts"), [
    ("whole run: one part per value", {}, [0, 1, 2]),
    ("a key the parts reset (scale) does not make it a part", {"scale": 2}, [0, 1, 2]),
    ("a key the parts copy (values) does not either", {"values": [4, 5]}, [0, 1]),
    ("params naming one part are not split again", {"part": 1}, None),
])  # fmt: skip
def test_split_gives_each_parts_params_unless_the_run_is_one_part(name: str, given: dict[str, int], parts: list[int] | None) -> None:
    got = experiments.split(SPLIT, SPLIT.params(given))
    assert (None if got is None else [p["part"] for p in got]) == parts, name
    assert experiments.split(ECHO, ECHO.params({})) is None  # no shards: never split


def test_unknown_experiment_is_a_clear_error() -> None:
    with pytest.raises(experiments.UnknownExperiment, match="known:"):
        experiments.get("no_such_experiment")


def test_every_registered_experiment_has_json_defaults_and_a_source() -> None:
    registry = experiments.load_all()
    assert "fb2009_policies" in registry
    for exp in registry.values():
        json.dumps(dict(exp.defaults))
        assert exp.source and exp.title
        assert set(exp.help) <= set(exp.defaults)


def test_fb2009_what_if_is_deterministic_and_compares_every_policy() -> None:
    seen: list[float] = []
    params = {"hours": 0.5, "capacity": [10, 5], "policies": ["fifo", "hltrf"]}
    first = experiments.run("fb2009_policies", params, lambda f, msg: seen.append(f))
    again = experiments.run("fb2009_policies", params)
    assert first == again
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    rows = first["tables"][0]["rows"]
    assert [r[0] for r in rows] == ["fifo", "hltrf"]
    assert rows[0][1] == rows[1][1] > 0  # the same jobs finish under both policies
    assert all(0.0 < r[4] <= 1.0 for r in rows)  # utilisation is a fraction
    assert all(r[5] <= 1e-9 for r in rows)  # sharing loss Omega <= 0 (paper 002, Eq. 5)
    assert first["params"]["hours"] == 0.5
