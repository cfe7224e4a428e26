"""Pages of ERA reservations (paper 001): the quote flow, my reservations, and the public
price curve, promised capacity, revenue and welfare."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from marketplace.ledger.money import format_money
from marketplace.ledger.selectors import account_of
from marketplace.market import selectors
from marketplace.market.models.tenants import Tenant
from marketplace.market.outlook import cluster_now
from marketplace.reservations import adapters as ra
from marketplace.reservations import charts as rc
from marketplace.reservations import selectors as rsel
from marketplace.reservations.models import ReservationQuote
from marketplace.reservations.services import QuoteMoved, reservation_accept, reservation_decline, reservation_quote
from marketplace.web.forms import MARKET_TIME_HELP, MarketTimeField, apply_service_errors, market_times_at
from marketplace.web.shortcuts import render_page, tenant_required


class ReservationRequestForm(forms.Form):
    """W units of a resource type for T seconds inside [A, D), worth at most V."""

    resource_type = forms.ChoiceField(label="Resource type")
    units = forms.IntegerField(label="Units (W)", help_text="Units held at once.")
    duration = forms.FloatField(label="Duration T (s, market clock)")
    arrival = MarketTimeField(label="Window start A (market clock)")
    deadline = MarketTimeField(label="Window end D (market clock)", help_text=f"The reservation ends by then. {MARKET_TIME_HELP}")
    value = forms.CharField(label="Worth at most V (money, optional)", required=False,
                            help_text="Never used to set the price; it helps the market predict demand.")

    def __init__(self, *args: Any, resource_types: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["resource_type"].choices = [(t.name, f"{t.name} ({t.capacity} units)") for t in resource_types]


@tenant_required
def reservation_new(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    market = tenant.market
    types = selectors.resource_types_of(market=market)
    s = ra.era_settings(market)
    initial = {"units": 4, "duration": 1800, "arrival": "now", "deadline": "in 4 h"}
    form = ReservationRequestForm(request.POST or None, initial=initial, resource_types=types)
    market_times_at(form, market.sim_time)
    if request.method == "POST" and form.is_valid():
        try:
            quote = reservation_quote(tenant=tenant, **form.cleaned_data)
        except ValidationError as exc:
            apply_service_errors(form, exc, {"window": "deadline"})
        else:
            return redirect("reservation-quote", pk=quote.pk)
    return render_page(request, "reservations/new.html", {
        "nav": "reserve", "form": form, "settings": s, "account": account_of(tenant=tenant),
        "cluster_now": cluster_now(market=market),
    }, market=market)


@tenant_required
def reservation_quote_view(request: HttpRequest, pk: int) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    quote = get_object_or_404(ReservationQuote.objects.select_related("resource_type"), pk=pk, tenant=tenant)
    alternatives = rsel.quote_alternatives(quote=quote)
    figure = rc.quote_figure(quote.offers, start=quote.start, alternatives=alternatives, units=quote.units, duration=quote.duration)
    return render_page(request, "reservations/quote.html", {
        "nav": "reserve", "quote": quote, "alternatives": alternatives, "figure": figure,
        "reservation": getattr(quote, "reservation", None), "cluster_now": cluster_now(market=tenant.market),
        "unit_price": rsel.window_unit_price(quote=quote),
    }, market=tenant.market)


@require_POST
@tenant_required
def reservation_quote_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    quote = get_object_or_404(ReservationQuote, pk=pk, tenant=tenant)
    if action not in ("accept", "decline"):
        raise Http404("unknown action")
    try:
        if action == "accept":
            r = reservation_accept(quote=quote, user=request.user)
            moved = "" if r.start == quote.start else " (the quoted start had begun: re-priced to the next feasible start)"
            messages.success(request, f"Reserved: {r.units} {quote.resource_type.name} units from {r.start:g} s to {r.end:g} s, "
                                      f"paid {format_money(r.price)}{moved}.")
            return redirect("reservation-list")
        reservation_decline(quote=quote)
        messages.info(request, "Quote declined; nothing was charged.")
        return redirect("reservation-list")
    except QuoteMoved as exc:
        if exc.quote is None:
            messages.error(request, " ".join(exc.messages))  # exactly why no start of the window can be booked
            return redirect("reservation-new")
        messages.warning(request, f"{' '.join(exc.messages)} The new price is {format_money(exc.quote.price)} "
                                  f"from {exc.quote.start:g} s on the market clock.")
        return redirect("reservation-quote", pk=exc.quote.pk)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("reservation-quote", pk=quote.pk)


@tenant_required
def reservation_list(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    return render_page(request, "reservations/list.html", {
        "nav": "reservations", "reservations": rsel.tenant_reservations(tenant=tenant)[:100],
        "quotes": rsel.tenant_quotes(tenant=tenant)[:30],
    }, market=tenant.market)


@login_required
def reservation_market(request: HttpRequest) -> HttpResponse:
    market = selectors.market_default()
    types = selectors.resource_types_of(market=market)
    name = request.GET.get("resource") or types[0].name
    rt = next((t for t in types if t.name == name), types[0])
    curve = rsel.price_curve(market=market, resource_type=rt, slots=int(ra.era_settings(market).horizon_slots)).__dict__
    figures = {
        "prices": rc.price_curve_figure(curve), "capacity": rc.capacity_figure(curve),
        "revenue": rc.revenue_figure(rsel.revenue_series(market=market)),
    }
    return render_page(request, "reservations/market.html", {
        "nav": "reservation-market", "figures": figures, "types": types, "resource": rt,
        "totals": rsel.reservation_totals(market=market), "settings": ra.era_settings(market),
    }, market=market)
