"""Units and money on the pages: one currency, and amounts shown exactly.

The rule (``marketplace.ledger.money``): money is kept to 4 decimal places and every amount the
services accept is shown to that precision; more places are refused by the service (so the
bid form and the API agree). Prices name their unit; times say simulated or wall clock.
"""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from marketplace.auction.models import WorkItem
from marketplace.auction.services import MAX_BUDGET, bid_submit, parse_budget
from marketplace.dashboard.charts import price_figure
from marketplace.deadlines.charts import deadline_payment_figure
from marketplace.ledger.money import MONEY_PLACES, format_amount, format_money, format_price
from marketplace.reservations.charts import price_curve_figure, quote_figure

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE_DIRS = [ROOT / "templates", *sorted((ROOT / "marketplace").glob("*/templates"))]  # site-wide, then each part's
BID = {"name": "tiny", "budget": "0.0001", "utility": "linear", "map_tasks": "1", "map_duration": "10", "map_weight": "1",
       "reduce_tasks": "0", "reduce_duration": "10", "reduce_weight": "1"}


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(("value", "shown"), [
    (Decimal("0.0001"), "< 0.01"), (Decimal("-0.0001"), "> -0.01"), (Decimal("12.5"), "12.50"), (Decimal("3"), "3.00"),
    (Decimal("1234567.891"), "1,234,567.89"), (Decimal("129044.6900"), "129,044.69"), (Decimal("416.6667"), "416.67"),
    (Decimal("0.125"), "0.12"), (Decimal("-2.25"), "-2.25"), (0.1, "0.10"), (Decimal("0"), "0.00"), (None, "—"),
])
def test_pages_show_amounts_with_two_places(value, shown):
    assert format_amount(value) == shown


@given(st.decimals(min_value=Decimal("0.0001"), max_value=MAX_BUDGET, places=MONEY_PLACES, allow_nan=False, allow_infinity=False))
def test_every_accepted_budget_is_shown_to_the_cent_and_never_as_nothing(budget):
    # given any budget the service accepts (the bid form and the API both parse through it)
    accepted = parse_budget(format(budget, "f"))
    shown = format_amount(accepted)
    # then the page shows it with two places, within half a cent, and a non-zero amount never as zero (one that
    # rounds to 0.00 at two places, half to even as the pages round, 0.005 included, reads "< 0.01")
    if accepted.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN) == 0:
        assert shown == "< 0.01"
    else:
        cents = shown.partition(".")[2]
        assert len(cents) == 2 and abs(Decimal(shown.replace(",", "")) - accepted) <= Decimal("0.005")


@given(st.decimals(min_value=Decimal("0.00001"), max_value=Decimal("1000"), places=MONEY_PLACES + 1, allow_nan=False, allow_infinity=False))
def test_finer_budgets_are_refused_by_the_service(budget):
    text = format(budget, "f")
    if budget == budget.quantize(Decimal("0.0001")):
        assert parse_budget(text) == budget
    else:
        with pytest.raises(ValidationError) as err:
            parse_budget(text)
        assert "decimal places" in str(err.value.message_dict["budget"])


def test_form_and_api_agree_on_too_fine_budgets(market, alice):
    client = _client(alice.user)
    page = client.post(reverse("bid-new"), BID | {"budget": "0.00001"})
    assert page.status_code == 200 and "decimal places" in page.content.decode()
    api = client.post("/api/jobs/", json.dumps({"name": "x", "budget": "0.00001", "utility": "linear",
                                                "work": [{"resource_type": "map", "tasks": 1, "task_duration": 10}]}),
                      content_type="application/json")
    assert api.status_code == 400 and "budget" in api.json()


def test_smallest_budget_is_not_shown_as_nothing_and_has_the_currency(market, alice, settings):
    settings.MARKET_CURRENCY = "tokens"
    client = _client(alice.user)
    response = client.post(reverse("bid-new"), BID)
    assert response.status_code == 302
    detail = client.get(response.url).content.decode()
    assert '<dd id="job-budget">&lt; 0.01 tokens</dd>' in detail  # not "0.00"
    jobs = client.get(reverse("job-list")).content.decode()
    assert "Budget (tokens)" in re.sub(r"<[^>]+>", "", jobs) and "&lt; 0.01" in jobs
    account = re.sub(r"<[^>]+>", "", client.get(reverse("account")).content.decode())
    assert "When (wall clock, UTC)" in account and "Amount (tokens)" in account


def test_times_are_labelled_simulated_or_wall_clock(market, alice):
    # one clock on every page (docs/economy.md, "One clock"): simulated time is "the market clock", labelled the same way
    bid_submit(tenant=alice, budget="5", work=[WorkItem("map", 2, 10.0)])
    client = _client(alice.user)
    jobs = re.sub(r"<[^>]+>", "", client.get(reverse("job-list")).content.decode())
    assert "Submitted (market clock)" in jobs and "h:mm:ss on the market clock" in jobs and "Market clock" in jobs
    assert "(sim)" not in jobs and "Sim clock" not in jobs


# Variables that hold money or prices: a template that shows one through floatformat (or raw)
# instead of the money/price filters fails here, so a new page cannot slip back.
MONEY_NAMES = re.compile(
    r"\{\{\s*[\w.]*\b(budget|price|amount|charged|held|available|cost|revenue|payment|welfare|value)\w*\s*(\|[^}]*)?\}\}"
)
ALLOWED_FILTERS = ("|money", "|price", "|price_bare", "|json_script", "|stringformat")


# Names that match but hold no money: a price formatted by the view (through marketplace.ledger.money),
# an experiment parameter, a price's source text, free slots.
NOT_MONEY = {"{{ r.price_text }}", "{{ p.value }}", "{{ quote.price_source }}", "{{ b.price_source }}", "{{ r.available }}"}


def test_templates_show_money_through_the_money_filters():
    read = [path for directory in TEMPLATE_DIRS for path in directory.rglob("*.html")]
    assert len(TEMPLATE_DIRS) >= 8 and len(read) >= 30, (TEMPLATE_DIRS, len(read))  # a glob that matched nothing reads nothing
    offenders = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for directory in TEMPLATE_DIRS for path in directory.rglob("*.html")
        for m in MONEY_NAMES.finditer(path.read_text())
        if not any(f in m.group(0) for f in ALLOWED_FILTERS) and m.group(0) not in NOT_MONEY
    ]
    assert offenders == []


def test_price_axes_name_their_currency_and_unit(settings):
    settings.MARKET_CURRENCY = "tokens"
    price = price_figure([{"sim_time": 0.0, "resource": "map", "price": 1.5}])
    assert price["layout"]["yaxis"]["title"]["text"] == "Implied price (tokens per slot)"
    curve = price_curve_figure({"resource": "map", "slot_seconds": 60.0, "times": [0.0], "unit_price": [1.0],
                                                    "slot_second_price": [1.0 / 60]})
    assert "tokens per slot-second" in curve["layout"]["yaxis"]["title"]["text"]  # the market's one unit of price
    quote = quote_figure([[0.0, 3.0], [60.0, 2.0]], start=60.0, alternatives=[], units=1, duration=60.0)
    assert quote["layout"]["yaxis"]["title"]["text"] == "Price of the reservation (tokens)"
    payment = deadline_payment_figure([(60.0, 2.0, 1.5), (120.0, 1.0, 1.0)])
    assert payment["layout"]["yaxis"]["title"]["text"] == "Payment (tokens)"


def test_money_and_price_strings(settings):
    settings.MARKET_CURRENCY = "credits"
    assert format_money(Decimal("7")) == "7.00 credits"
    assert format_price(0.0123456, "VM-second") == "0.01235 credits per VM-second"
