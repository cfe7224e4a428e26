"""The Experiments page's run form is built from each experiment's declaration: a number box carries the declared
bounds as min and max, a choice is a select, a list of choices a box per choice, and the server checks the same
declaration, answering a bad value with an error at its field (the page's own form and the service alike)."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from marketplace.lab.forms import parse_params
from marketplace.lab.models import ExperimentRun
from marketplace.lab.services import experiments as svc
from simulator import experiments
from simulator.experiments import Experiment, table


def _echo(params: experiments.Params, progress: experiments.Progress) -> experiments.Result:
    return {"figures": [], "tables": [table("params", ["key", "value"], [[k, str(v)] for k, v in params.items()])], "summary": "ok"}


experiments.register(Experiment(
    name="lab_declared", title="Declared", source="test", run=_echo,
    defaults={"traces": ["fb2009", "kth"], "mode": "fast", "seeds": 3, "rate": 0.5, "sizes": [1, 2], "names": ["a, b", "c"]},
    choices={"traces": ["fb2009", "kth", "lcg"], "mode": ["fast", "exact"], "names": ["a, b", "c", "d"]},
    bounds={"seeds": (1, 10), "rate": (0.0, 1.0), "sizes": (1, None)},
))


@pytest.fixture(autouse=True)
def _inline(settings):  # type: ignore[no-untyped-def]
    settings.EXPERIMENTS_IN_THREAD = False


def _card(page: str, name: str) -> str:
    card = page[page.index(f'id="exp-{name}"'):]
    return card[:card.index("</section>")]


def _field(card: str, key: str) -> str:
    """The element of field ``key`` (an input, a select or a fieldset), up to its closing tag or end."""
    m = re.search(rf'<(input|select|fieldset)\b[^>]*id="lab_declared-{key}"[^>]*>(.*?</\1>)?', card, re.S)
    assert m, key
    return m[0]


def test_the_form_is_built_from_the_declaration(staff) -> None:  # type: ignore[no-untyped-def]
    ops = Client()
    ops.force_login(staff)
    card = _card(ops.get(reverse("lab")).content.decode(), "lab_declared")
    seeds, rate = _field(card, "seeds"), _field(card, "rate")
    assert 'type="number"' in seeds and 'min="1"' in seeds and 'max="10"' in seeds and 'step="1"' in seeds
    assert 'type="number"' in rate and 'min="0"' in rate and 'max="1"' in rate
    mode = _field(card, "mode")
    assert mode.startswith("<select") and re.findall(r'<option value="(\w+)"( selected)?', mode) == [("fast", " selected"), ("exact", "")]
    traces = _field(card, "traces")
    boxes = re.findall(r'<input type="checkbox" name="p_traces" value="(\w+)"( checked)?>', traces)
    assert boxes == [("fb2009", " checked"), ("kth", " checked"), ("lcg", "")]
    # a choice holding a comma is one box
    names = [unescape(v) for v in re.findall(r'name="p_names" value="([^"]+)"', _field(card, "names"))]
    assert names == ["a, b", "c", "d"]
    # a list of numbers stays a comma list, its bounds said in its help
    assert 'name="p_sizes" value="1, 2"' in card and "each at least 1" in card


def test_the_published_study_offers_its_traces_and_configurations_as_choices(staff) -> None:  # type: ignore[no-untyped-def]
    from simulator.experiments.published.setup import LABELS, TRACES

    ops = Client()
    ops.force_login(staff)
    card = _card(ops.get(reverse("lab")).content.decode(), "published_schedulers")
    policies = [unescape(v) for v in re.findall(r'name="p_policies" value="([^"]+)"', card)]
    assert policies == list(LABELS) and "Tiresias, three limits" in policies
    assert re.findall(r'name="p_traces" value="(\w+)"', card) == list(TRACES)
    assert re.search(r'id="published_schedulers-seeds"[^>]*min="1"', card, re.S)


def test_bad_values_are_refused_at_their_fields_and_kept_on_the_page(staff) -> None:  # type: ignore[no-untyped-def]
    ops = Client()
    ops.force_login(staff)
    post = {"name": "lab_declared", "typed_form": "1", "p_seeds": "0", "p_rate": "1.5", "p_mode": "bogus", "p_sizes": "0, 3",
            "p_names": ["c"]}  # no trace ticked
    response = ops.post(reverse("lab"), post)
    assert response.status_code == 400 and not ExperimentRun.objects.exists()
    card = _card(response.content.decode(), "lab_declared")
    errors = dict(re.findall(r'id="lab_declared-(\w+)-err" role="alert">([^<]+)<', card))
    assert set(errors) == {"seeds", "rate", "mode", "sizes", "traces"}, errors
    assert errors["seeds"] == "At least 1 (got 0)." and errors["rate"] == "At most 1 (got 1.5)."
    assert errors["sizes"] == "At least 1 (got 0)."
    assert "fast" in unescape(errors["mode"]) and "Tick at least one" in errors["traces"]
    # what was entered is shown again: the typed numbers, and the one name ticked
    assert 'name="p_seeds" value="0"' in card and re.findall(r'name="p_names" value="(\w)" checked', card) == ["c"]


def test_good_values_start_a_run_with_typed_params(staff, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    ops = Client()
    ops.force_login(staff)
    post = {"name": "lab_declared", "typed_form": "1", "p_seeds": "4", "p_rate": "1", "p_mode": "exact", "p_sizes": "3, 5",
            "p_traces": ["kth", "lcg"], "p_names": ["a, b", "d"]}
    with django_capture_on_commit_callbacks(execute=True):
        response = ops.post(reverse("lab"), post)
    assert response.status_code == 302
    run = ExperimentRun.objects.get()
    assert run.params == {"traces": ["kth", "lcg"], "mode": "exact", "seeds": 4, "rate": 1.0, "sizes": [3, 5], "names": ["a, b", "d"]}


def test_the_service_and_a_script_obey_the_same_declaration(staff) -> None:  # type: ignore[no-untyped-def]
    for bad in ({"seeds": 11}, {"mode": "slow"}, {"traces": ["fb2009", "nope"]}, {"sizes": [0]}):
        with pytest.raises(ValidationError) as err:
            svc.experiment_start(name="lab_declared", params=bad, user=staff)
        assert "params" in err.value.message_dict, bad
    # a script posting comma text: a choice holding a comma stays whole
    exp = experiments.get("lab_declared")
    assert parse_params(exp, {"p_names": "a, b, d"}) == ({"names": ["a, b", "d"]}, {})
    # a declaration whose default breaks it is refused when registered
    with pytest.raises(ValueError, match="at least 5"):
        Experiment(name="bad_decl", title="t", source="s", run=_echo, defaults={"n": 1}, bounds={"n": (5, None)})
    with pytest.raises(ValueError, match="unknown parameters"):
        Experiment(name="bad_decl", title="t", source="s", run=_echo, defaults={"n": 1}, choices={"m": [1]})
