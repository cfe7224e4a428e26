"""``auction.serializers.plain_bid`` (the bid's fast check) against ``BidSerializer``: on random bodies,
valid and not, whatever it accepts the serializer accepts with the same values of the same types,
and it accepts the bodies clients send."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from marketplace.auction.serializers import BidSerializer, plain_bid

TEXT = st.one_of(st.text(max_size=130), st.sampled_from(["", " ", "load", " job ", "x" * 120, "x" * 121, "a\x00b", "\u202e", "é"]))
NUMBER = st.one_of(st.integers(-10, 10**7), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0, 0.001, 0.0009, 604800, 604800.5, 10**400, 1e6]))
BUDGET = st.one_of(st.sampled_from(["1", "56", "0.5", "0.0001", "0.00001", "1000000000", "1000000000.0", "1000000001", "01", "1e3",
                                    " 5", "5.12345", "-3", "١٢", "1_000", "NaN"]),
                   st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("1e9"), places=4).map(str),
                   st.integers(0, 100), st.floats(0, 100), st.none(), st.booleans())
ANY = st.one_of(st.none(), st.booleans(), NUMBER, TEXT, st.lists(st.integers(), max_size=2),
                st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def _field(draw: Any, out: dict[str, Any], key: str, usual: Any, odd: Any, *, optional: bool = True) -> None:
    """``out[key]``: mostly a usual value, sometimes an odd one, sometimes (``optional``) left out."""
    pick = draw(st.integers(0, 7))
    if pick == 0 and optional:
        return
    out[key] = draw(odd if pick == 1 else usual)


@st.composite
def work_items(draw: Any) -> Any:
    if draw(st.integers(0, 19)) == 0:
        return draw(ANY)
    item: dict[str, Any] = {}
    _field(draw, item, "resource_type", st.sampled_from(["map", "reduce", " map ", "m" * 40, "m" * 41]),
           st.one_of(st.sampled_from(["", " "]), TEXT, ANY))
    _field(draw, item, "tasks", st.sampled_from([1, 3, 20, 0, 1_000_000, 1_000_001, 2.0, True]), ANY)
    durations = st.one_of(st.integers(0, 100), st.sampled_from([0.0009, 0.001, 604800, 604800.5]), st.floats(0.001, 1e5))
    _field(draw, item, "task_duration", durations, st.one_of(NUMBER, ANY))
    _field(draw, item, "weight", st.floats(0, 10), st.one_of(NUMBER, ANY))
    if draw(st.integers(0, 19)) == 0:
        item["other"] = 1
    return item


@st.composite
def bodies(draw: Any) -> Any:
    if draw(st.integers(0, 39)) == 0:
        return draw(ANY)
    body: dict[str, Any] = {}
    _field(draw, body, "name", st.sampled_from(["load", "", " a b ", "x" * 120, "x" * 121, " " + "x" * 120 + " "]), st.one_of(TEXT, ANY))
    _field(draw, body, "budget", st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("1e9"), places=4).map(str), BUDGET)
    _field(draw, body, "utility", st.sampled_from(["linear", "log"]), st.one_of(st.sampled_from(["step", "LINEAR", ""]), ANY))
    _field(draw, body, "work", st.lists(work_items(), min_size=1, max_size=3), st.one_of(st.lists(work_items(), max_size=3), ANY))
    _field(draw, body, "job_class", st.sampled_from(["etl", "", "y" * 121]), st.one_of(TEXT, ANY))
    _field(draw, body, "use_adopted_utility", st.booleans(), ANY)
    _field(draw, body, "min_utility", st.one_of(st.none(), st.floats(0, 1)), st.one_of(NUMBER, ANY))
    if draw(st.integers(0, 19)) == 0:
        body["extra"] = 1
    return body


def _typed(value: Any) -> Any:
    """``value`` with the type of every part, so that 1 == 1.0 == True do not pass for each other."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value), value, str(value)


@settings(max_examples=2000, deadline=None)
@given(bodies())
def test_plain_bid_accepts_only_what_the_serializer_accepts_with_its_values(body: Any) -> None:
    plain = plain_bid(body)
    if plain is None:
        return
    bid = BidSerializer(data=body)
    assert bid.is_valid(), (body, bid.errors)
    assert _typed(plain) == _typed(dict(bid.validated_data))


CLIENT_BODIES = (
    {"name": "load", "budget": "56", "utility": "linear", "work": [{"resource_type": "map", "tasks": 3, "task_duration": 41.0}]},
    {"budget": "12.5", "work": [{"resource_type": "map", "tasks": 2, "task_duration": 5},
                                {"resource_type": "reduce", "tasks": 1, "task_duration": 5.0, "weight": 2}]},
    {"name": "etl", "budget": "0.0001", "utility": "log", "job_class": "etl", "use_adopted_utility": True, "min_utility": 0.5,
     "work": [{"resource_type": "reduce", "tasks": 1000000, "task_duration": 604800}]},
)


def test_plain_bid_takes_the_bodies_clients_send() -> None:
    for body in CLIENT_BODIES:
        bid = BidSerializer(data=body)
        assert bid.is_valid(), bid.errors
        assert _typed(plain_bid(body)) == _typed(dict(bid.validated_data))
