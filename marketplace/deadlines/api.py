"""REST API of deadline quotes and bookings (paper 003; ``deadlines.services``).

``POST /api/deadline/quote/`` answers "what is the cheapest way to finish this
work by D?" without writing anything, with ``paid_rate``: what the booking pays per
slot-second of the work, beside the unit prices ``b_k``. ``POST /api/deadline/book/``
books it and returns the job with the quoted and the booked start; it answers 409
with the new quote when the price (``max_payment``), the start (``quoted_start``) or
the guaranteed finish (``quoted_finish``) is worse than the quote accepted.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace.api.answers import DeadlineBookOut, DeadlineChangedOut, DeadlineQuoteOut
from marketplace.api.conventions import Conflict, created, request_tenant, service_errors
from marketplace.api.fields import StrictDecimalField, StrictJSON, money_format, money_text
from marketplace.api.idempotency import IDEMPOTENCY_PARAMETER, idempotent
from marketplace.api.parsers import SafeJSONParser
from marketplace.auction.models import WorkItem
from marketplace.auction.serializers import WorkItemSerializer, each_type_once
from marketplace.auction.services import MAX_BUDGET
from marketplace.deadlines.selectors import booking_start_change
from marketplace.deadlines.services import DeadlineQuote, QuoteChanged, deadline_book, deadline_quote


class DeadlineRequestSerializer(StrictJSON, serializers.Serializer):
    """Work, a deadline on the market clock and the estimate's range (paper 003, Definition 2)."""

    work = WorkItemSerializer(many=True, allow_empty=False)
    deadline = serializers.FloatField(help_text="Finish by this simulated time (seconds on the market clock).")
    alpha_err = serializers.FloatField(default=1.0, help_text="Lowest estimate / real work ratio (0 < alpha_err <= 1).")
    beta_err = serializers.FloatField(default=1.0, help_text="Highest estimate / real work ratio (>= 1).")

    def validate_work(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return each_type_once(items)


class DeadlineBookSerializer(DeadlineRequestSerializer):
    name = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")
    max_payment = StrictDecimalField(
        max_digits=18, decimal_places=4, min_value=Decimal("0.0001"), max_value=MAX_BUDGET, required=False,
        validators=[money_format(MAX_BUDGET)],
        help_text="Refuse the booking if the price is now above this (the quoted price).",
    )
    quoted_start = serializers.FloatField(
        required=False, help_text="The quote's starts_at (simulated seconds on the market clock): refuse the booking (409 with "
                                  "the new quote) if its slots are now free later (a quoted start the clock has passed counts as now).")
    quoted_finish = serializers.FloatField(
        required=False, help_text="The quote's finishes_by (simulated seconds on the market clock): refuse the booking (409 with "
                                  "the new quote) if its guaranteed finish is now later (beyond the clock's own move since quoted_start).")


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _money(x: float) -> str | None:
    return money_text(x) if math.isfinite(x) else None


def quote_data(q: DeadlineQuote) -> dict[str, Any]:
    """The quote as JSON (infinite values as null). Times in simulated seconds; amounts in the
    API's money format (``api.fields.money_text``); unit prices are rates (money per slot-second)."""
    return {
        "feasible": q.feasible,
        "start": q.start, "deadline": q.deadline, "relative_deadline": q.relative_deadline,
        "planned_deadline": q.planned_deadline, "alpha_err": q.alpha_err, "beta_err": q.beta_err,
        "node": q.node, "price_source": q.price_source,
        "resources": [
            {"resource_type": t, "tasks": n, "work": w, "unit_price": b, "available": a, "slots": r, "continuous": c,
             "capacity": q.capacity[k], "busy_now": q.busy_now[k], "promised": q.promised[k]}
            for k, (t, n, w, b, a, r, c) in enumerate(zip(q.types, q.tasks, q.workload, q.unit_prices, q.available, q.slots,
                                                          q.continuous, strict=True))
        ],
        "start_delay": q.start_delay, "reason": q.reason,
        "starts_at": q.starts_at if q.feasible else None, "finishes_by": _finite(q.finishes_by) if q.feasible else None,
        "paid_rate": _finite(q.paid_rate),
        "exec_time": _finite(q.exec_time), "payment": money_text(q.price) if q.feasible else None,
        "continuous_exec_time": _finite(q.continuous_exec_time), "continuous_payment": _money(q.continuous_payment),
        "rounding_cost": _money(q.rounding_cost), "rounded_up_payment": _money(q.rounded_up_payment),
        "nominal_payment": _money(q.nominal_payment), "extra_cost": _money(q.extra_cost),
        "guarantee": [_finite(x) for x in q.guarantee], "paper_guarantee": [_finite(x) for x in q.paper_guarantee],
        "fastest_time": _finite(q.fastest_time),
        "curve": [{"relative_deadline": d, "payment": _money(p), "continuous_payment": _money(c)} for d, p, c in q.curve],
    }


def _work(items: list[dict[str, Any]]) -> list[WorkItem]:
    return [WorkItem(w["resource_type"], w["tasks"], w["task_duration"], w["weight"]) for w in items]


class DeadlineQuoteView(APIView):
    """Quote the cheapest whole-slot booking that meets the deadline (nothing is written)."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(request=DeadlineRequestSerializer, responses={200: DeadlineQuoteOut})
    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        req = DeadlineRequestSerializer(data=request.data)
        req.is_valid(raise_exception=True)
        d = req.validated_data
        try:
            q = deadline_quote(
                market=tenant.market, work=_work(d["work"]), deadline=d["deadline"], alpha_err=d["alpha_err"], beta_err=d["beta_err"],
            )
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return Response(quote_data(q))


class DeadlineBookView(APIView):
    """Book the quote: a job with reservations, paid at a fixed price through the ledger."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(request=DeadlineBookSerializer, responses={201: DeadlineBookOut, 409: DeadlineChangedOut},
                   parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        req = DeadlineBookSerializer(data=request.data)
        req.is_valid(raise_exception=True)
        d = req.validated_data
        try:
            job, q = deadline_book(
                tenant=tenant, work=_work(d["work"]), deadline=d["deadline"], alpha_err=d["alpha_err"], beta_err=d["beta_err"],
                max_payment=d.get("max_payment"), quoted_start=d.get("quoted_start"), quoted_finish=d.get("quoted_finish"),
                name=d["name"], user=request.user,
            )
        except QuoteChanged as exc:  # worse than the quote accepted: the tenant reviews the new one
            body = {**exc.message_dict, "detail": " ".join(exc.messages), "quote": quote_data(exc.quote)}
            return Response(body, status=status.HTTP_409_CONFLICT)
        except DjangoValidationError as exc:
            if "max_payment" in getattr(exc, "message_dict", {}):  # the price moved above the caller's limit: quote again
                raise Conflict(exc.message_dict) from None
            raise service_errors(exc) from None
        booking = job.deadline_booking
        change = booking_start_change(booking)
        data = quote_data(q) | {
            "job": job.pk, "payment": money_text(job.charged), "paid_rate": booking.paid_rate,
            "quoted_start": change.quoted, "booked_start": change.booked, "start_moved": change.moved, "notice": change.notice,
        }
        return created(request, data, self.location_of(data))

    @staticmethod
    def location_of(body: dict[str, Any]) -> str:
        return reverse("api-job-detail", args=[body["job"]])
