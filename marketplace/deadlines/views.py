"""The deadline quote page (paper 003): form, quote with the cost-of-urgency chart, booking.

One page, ``/deadline/``: the tenant enters its work (tasks x seconds per task
per resource type), the deadline on the market clock and its estimate's range;
"Get quote" shows the resource vector, time, payment (with what it comes to per
slot-second of the work, beside the unit prices), the guarantee interval and the
payment-against-deadline chart; "Book" books the quote at no more than the price
shown, no later start and no later guaranteed finish, or shows the new quote
(``deadlines.services.deadline_book``).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from marketplace.auction.models import WorkItem
from marketplace.auction.services import MAX_TASK_DURATION_S, MAX_TASKS
from marketplace.deadlines.charts import deadline_payment_figure
from marketplace.deadlines.selectors import booking_start_change
from marketplace.deadlines.services import DeadlineQuote, QuoteChanged, deadline_book, deadline_quote
from marketplace.ledger.money import format_money
from marketplace.ledger.selectors import account_of
from marketplace.market import selectors
from marketplace.market.models.jobs import Job
from marketplace.market.models.queues import ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.outlook import cluster_now
from marketplace.web import charts
from marketplace.web.forms import MARKET_TIME_HELP, MarketTimeField, apply_service_errors, market_times_at
from marketplace.web.shortcuts import render_page, tenant_required
from marketplace.web.text import seconds_text

DEFAULT_DEADLINE = "in 15 min"  # the form's default deadline, read when the form is sent (never in the past)


class DeadlineForm(forms.Form):
    """Work per resource type, a deadline on the market clock and the estimate's range."""

    name = forms.CharField(max_length=120, required=False, label="Job name")
    deadline = MarketTimeField(
        label="Finish by (market clock)",
        help_text=f"Must lie after the market clock shown at the top of the page: {MARKET_TIME_HELP}",
    )
    alpha_err = forms.FloatField(
        label="Estimate range: lowest estimate / real work (alpha_err)", initial=1.0,
        help_text="0 < alpha_err <= 1. The quote plans for D' = alpha_err x D so a job that is up to 1/alpha_err longer still finishes.",
    )
    beta_err = forms.FloatField(label="Highest estimate / real work (beta_err)", initial=1.0, help_text="beta_err >= 1.")
    max_payment = forms.DecimalField(required=False, widget=forms.HiddenInput, max_digits=18, decimal_places=4)
    quoted_start = forms.FloatField(required=False, widget=forms.HiddenInput)
    quoted_finish = forms.FloatField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, resource_types: list[ResourceType], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resource_types = resource_types
        self.keys = {t.pk: re.sub(r"\W", "_", t.name.strip().lower()) or f"rt{t.pk}" for t in resource_types}
        for k, t in enumerate(resource_types):
            key = self.keys[t.pk]
            self.fields[f"{key}_tasks"] = forms.IntegerField(
                label=f"{t.name} tasks", min_value=0, max_value=MAX_TASKS, initial=20 if k == 0 else 4,
            )
            self.fields[f"{key}_duration"] = forms.FloatField(
                label=f"{t.name} seconds per task", initial=30.0 if k == 0 else 60.0, max_value=MAX_TASK_DURATION_S,
            )

    @property
    def work_rows(self) -> list[tuple[ResourceType, forms.BoundField, forms.BoundField]]:
        return [(t, self[f"{self.keys[t.pk]}_tasks"], self[f"{self.keys[t.pk]}_duration"]) for t in self.resource_types]

    def work(self) -> list[WorkItem]:
        d = self.cleaned_data
        items = [WorkItem(t.name, d[f"{self.keys[t.pk]}_tasks"], d[f"{self.keys[t.pk]}_duration"]) for t in self.resource_types]
        return [it for it in items if it.tasks > 0]

    def add_service_errors(self, exc: ValidationError) -> None:
        """Service errors to fields; work, price, start, finish and funds go above the form (no single field holds them)."""
        apply_service_errors(self, exc, {"max_payment": "price", "quoted_start": "start", "quoted_finish": "finish"})


def _quote_rows(q: DeadlineQuote) -> list[dict[str, Any]]:
    return [
        {"type": t, "tasks": n, "work": w, "price": b, "available": a, "slots": r, "continuous": c, "busy": q.busy_now[k],
         "capacity": q.capacity[k], "promised": q.promised[k]}
        for k, (t, n, w, b, a, r, c) in enumerate(zip(q.types, q.tasks, q.workload, q.unit_prices, q.available, q.slots,
                                                      q.continuous, strict=True))
    ]


def _booked_message(request: HttpRequest, job: Job) -> None:
    booking = job.deadline_booking
    change = booking_start_change(booking)
    paid = f" ({booking.paid_rate:.4g} per slot-second of its work)" if booking.paid_rate else ""
    text = (f"Booked: job #{job.pk} holds its slots from now, free at {change.booked:.0f} s on the market clock, "
            f"and was charged {format_money(job.charged)}{paid}.")
    if change.notice:
        messages.warning(request, f"{text} {change.notice}")
    else:
        messages.success(request, text)


@tenant_required
@require_http_methods(["GET", "POST"])
def deadline_page(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    market = tenant.market
    types = selectors.resource_types_of(market=market)
    form = DeadlineForm(request.POST or None, resource_types=types, initial={"deadline": DEFAULT_DEADLINE})
    market_times_at(form, market.sim_time)
    quote: DeadlineQuote | None = None
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        args = {"work": form.work(), "deadline": d["deadline"], "alpha_err": d["alpha_err"], "beta_err": d["beta_err"]}
        try:
            if "book" in request.POST:
                job, _ = deadline_book(tenant=tenant, max_payment=d["max_payment"], quoted_start=d["quoted_start"],
                                       quoted_finish=d["quoted_finish"], name=d["name"], user=request.user, **args)
                _booked_message(request, job)
                return redirect("job-detail", pk=job.pk)
            quote = deadline_quote(market=market, **args)
        except QuoteChanged as exc:  # dearer, later or finishing later than the quote shown: show the new quote
            form.add_service_errors(exc)
            quote = deadline_quote(market=market, **args)
        except ValidationError as exc:
            form.add_service_errors(exc)
    if quote is not None and quote.feasible:
        form.data = form.data.copy()
        # "Book" accepts at most the price shown, no later start and no later guaranteed finish
        form.data.update({"max_payment": str(quote.price), "quoted_start": repr(quote.starts_at),
                          "quoted_finish": repr(quote.finishes_by)})
    figure = None
    if quote is not None:
        figure = deadline_payment_figure(quote.curve, quoted=(quote.relative_deadline, quote.payment) if quote.feasible else None,
                                         alpha_err=quote.alpha_err)
    return render_page(request, "deadlines/quote.html", {
        "nav": "deadline", "form": form, "quote": quote, "rows": _quote_rows(quote) if quote else [], "figure": figure,
        "fastest_text": seconds_text(quote.fastest_time) if quote is not None else "",
        "account": account_of(tenant=tenant), "now": market.sim_time, "now_hms": charts.format_hms(market.sim_time),
        "price": quote.price if quote is not None and quote.feasible else Decimal("0"),
        "cluster_now": cluster_now(market=market),
    }, market=market)
