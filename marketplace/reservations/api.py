"""REST API for ERA reservations (paper 001, Secs. 2.3.1-2.3.2).

Tenants: quotes (create, list, show, accept, decline), the one-shot request and
their reservations. Everyone signed in: the price curve. Cluster managers (the
Django group ``cluster-manager``): the current allocation (with an ETag) and
the update call. Accept and request are plain DRF views, so an idempotency
layer for money-moving POSTs can wrap them.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace.api.conventions import created, request_tenant, service_errors
from marketplace.api.fields import MoneyField, StrictJSON, money_format, money_text
from marketplace.api.idempotency import IDEMPOTENCY_PARAMETER, idempotent
from marketplace.api.parsers import SafeJSONParser
from marketplace.auction.services import MAX_BUDGET
from marketplace.market import roles, selectors
from marketplace.market.roles import CLUSTER_MANAGER
from marketplace.market.validation import StateConflict
from marketplace.reservations import selectors as rsel
from marketplace.reservations.models import Reservation, ReservationQuote
from marketplace.reservations.services import (
    QuoteMoved,
    cluster_update,
    reservation_accept,
    reservation_decline,
    reservation_quote,
    reservation_request,
)


class RequestSerializer(StrictJSON, serializers.Serializer):
    """W units of a resource type for T seconds inside [A, D), worth at most V (shape only;
    the service checks the rules and answers with field errors)."""

    resource_type = serializers.CharField(max_length=40)
    units = serializers.IntegerField(help_text="W: units held at once.")
    duration = serializers.FloatField(help_text="T: simulated seconds.")
    arrival = serializers.FloatField(help_text="A: window start, simulated seconds on the market clock.")
    deadline = serializers.FloatField(help_text="D: window end (exclusive), simulated seconds.")
    value = serializers.CharField(required=False, allow_null=True, allow_blank=True, default=None, trim_whitespace=False,
                                  validators=[money_format(MAX_BUDGET)],
                                  help_text="V: the most you would pay (money units); never used to set the price.")


PAID_RATE_HELP = ("What the tenant pays per slot-second of its work: price / the work of the job the reservation books "
                  "(units tasks of duration seconds), money per slot-second, a rate; the same number as unit_rate.")

# [start, price] pairs: the start a number (simulated seconds), the price a 4-place money string (null: no room).
OFFERS_SCHEMA = {
    "type": "array",
    "items": {"type": "array", "minItems": 2, "maxItems": 2,
              "items": {"oneOf": [{"type": "number"}, {"type": "string", "pattern": r"^-?[0-9]+\.[0-9]{4}$", "nullable": True}]},
              "description": "[start (simulated seconds), price (a 4-place money string, or null when the start has no room)]."},
}


class QuoteSerializer(serializers.ModelSerializer):
    resource_type = serializers.CharField(source="resource_type.name")
    offers = serializers.SerializerMethodField(
        help_text="[start s, price] of every start, by start; the price a 4-place money string (null: no room).")
    alternatives = serializers.SerializerMethodField(help_text="The next cheapest starts: [start s, price (4-place money string)].")
    unit_rate = serializers.FloatField(read_only=True, help_text=(
        "The price per slot-second: price / (units x duration), money per slot-second, the unit every price of the "
        "market is compared in (the spot market's realised rate, deadline unit prices)."))
    paid_rate = serializers.FloatField(read_only=True, help_text=PAID_RATE_HELP)

    class Meta:
        model = ReservationQuote
        fields = ("id", "resource_type", "units", "duration", "arrival", "deadline", "value", "start", "price", "unit_rate", "paid_rate",
                  "status", "quoted_at", "expires_at", "offers", "alternatives", "replaced_by")

    @extend_schema_field(OFFERS_SCHEMA)
    def get_offers(self, quote: ReservationQuote) -> list[tuple[float, str | None]]:
        return [(float(t), money_text(p)) for t, p in quote.offers]

    @extend_schema_field(OFFERS_SCHEMA)
    def get_alternatives(self, quote: ReservationQuote) -> list[tuple[float, str | None]]:
        return [(t, money_text(p)) for t, p in rsel.quote_alternatives(quote=quote)]


class ReservationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    job = serializers.IntegerField(source="job_id")
    job_status = serializers.CharField(source="job.status")
    resource_type = serializers.CharField(source="resource_type.name")
    units = serializers.IntegerField()
    start = serializers.FloatField()
    end = serializers.FloatField()
    arrival = serializers.FloatField()
    deadline = serializers.FloatField()
    price = MoneyField(help_text="Price of the whole reservation, paid at acceptance.")
    unit_rate = serializers.FloatField(help_text="price / (units x (end - start)), money per slot-second.")
    paid_rate = serializers.FloatField(help_text=PAID_RATE_HELP)
    value = MoneyField(help_text="V: the most the tenant would pay (null if not given).", allow_null=True)
    quote = serializers.IntegerField(source="quote_id", allow_null=True)


class RequestOutSerializer(serializers.Serializer):
    """The one-shot request's answer (shape only, for the schema)."""

    accepted = serializers.BooleanField(help_text="Whether V covered the price and the reservation was booked.")
    quote = QuoteSerializer(help_text="The quote priced for the request (accepted or declined).")
    reservation = ReservationSerializer(allow_null=True, help_text="The reservation booked (null when not accepted).")


class QuoteConflictSerializer(serializers.Serializer):
    """409 of accepting a quote: why, and the quote to review (shape only, for the schema)."""

    detail = serializers.CharField(help_text="Why the quote was not booked.")
    quote = QuoteSerializer(allow_null=True, help_text=(
        "The quote to review: the new one when the quote expired or the market moved (accept it to book), the quote "
        "itself when it is no longer open (accepted, declined or expired), null when no start has room any more."))


class PriceTotalsSerializer(serializers.Serializer):
    reservations = serializers.IntegerField(help_text="Reservations booked, a count.")
    revenue = MoneyField(help_text="Sum of the reservations' prices.")
    welfare = MoneyField(help_text="Sum of the values of booked requests whose job finished.")
    requested_value = MoneyField(help_text="Sum of the values of every request that named one.")
    welfare_share = serializers.FloatField(allow_null=True, help_text="welfare / requested_value, 0 to 1 (null: nothing requested).")
    late = serializers.IntegerField(help_text="Reservations whose job finished after its deadline, a count.")


class PriceCurveSerializer(serializers.Serializer):
    """The coming horizon of one resource type, slot by slot (``reservations.selectors.PriceCurve``)."""

    resource = serializers.CharField(help_text="Resource type name.")
    slot_seconds = serializers.FloatField(help_text="Length of a slot, simulated seconds.")
    times = serializers.ListField(child=serializers.FloatField(), help_text="Slot starts, simulated seconds.")
    unit_price = serializers.ListField(child=serializers.FloatField(allow_null=True), help_text=(
        "Price of the next unit of each slot, money per unit-slot (a rate; null where the slot has no unit left)."))
    slot_second_price = serializers.ListField(child=serializers.FloatField(allow_null=True), help_text=(
        "The same per slot-second, money per slot-second (null where the slot has no unit left)."))
    promised = serializers.ListField(child=serializers.IntegerField(), help_text="Units promised per slot, a count.")
    busy = serializers.ListField(child=serializers.IntegerField(), help_text="Units held by running tasks per slot, a count.")
    queued = serializers.ListField(child=serializers.FloatField(), help_text="Units the queued work would use per slot.")
    capacity = serializers.IntegerField(help_text="Units of the type, a count.")
    anchored = serializers.BooleanField(help_text="Whether the prices are anchored to the spot market's realised rate.")
    totals = PriceTotalsSerializer(help_text="The reservation market's totals.")


class ExecutionSerializer(serializers.Serializer):
    id = serializers.CharField(allow_null=True, help_text="The executor's id of the task (null before it is submitted).")
    executor = serializers.CharField(help_text="Who runs it (e.g. slurm).")
    where = serializers.CharField(allow_null=True, help_text="Where it runs (the executor's partition).")
    state = serializers.CharField(help_text="The market's view: submitted or running.")
    executor_state = serializers.CharField(allow_null=True, allow_blank=True, help_text="The executor's own state.")


class AllocatedReservationSerializer(serializers.Serializer):
    resource_type = serializers.CharField()
    units = serializers.IntegerField()
    start = serializers.FloatField()
    end = serializers.FloatField()
    window = serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2,
                                   help_text="[arrival, deadline], simulated seconds.")


class AllocatedJobSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    units = serializers.DictField(child=serializers.IntegerField(), help_text="Units held now per resource type name.")
    executions = ExecutionSerializer(many=True, help_text="Its tasks on a real cluster (none on the simulated one).")
    reservation = AllocatedReservationSerializer(allow_null=True, help_text="Its reservation in force (null if none).")


class ClusterAllocationSerializer(serializers.Serializer):
    sim_time = serializers.FloatField()
    etag = serializers.CharField(help_text="The allocation's version (also the ETag header).")
    jobs = AllocatedJobSerializer(many=True)


class UpdateOutSerializer(serializers.Serializer):
    capacity = serializers.DictField(child=serializers.IntegerField(), help_text="Slots per resource type name after the update.")
    terminated = serializers.ListField(child=serializers.IntegerField(), help_text="Ids of the jobs ended by the update.")
    replanned = serializers.BooleanField(help_text="Always true: the reservations were planned again.")


def _request_data(request: Request) -> dict[str, Any]:
    data = RequestSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)


def _quote_of(request: Request, pk: int) -> ReservationQuote:
    return get_object_or_404(ReservationQuote, pk=pk, tenant=request_tenant(request))  # another tenant's quote: 404


class QuoteListView(generics.GenericAPIView):
    """GET: the caller's quotes, newest first, paginated. POST: a new quote (no commitment,
    valid until ``expires_at``)."""

    parser_classes = (SafeJSONParser,)
    serializer_class = QuoteSerializer
    queryset = ReservationQuote.objects.none()  # the schema's model; get() reads the caller's quotes
    ordering_fields = ("id", "start", "price")
    ordering_default = "-id (newest first)"

    @extend_schema(responses=QuoteSerializer(many=True))
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(rsel.tenant_quotes(tenant=request_tenant(request))))
        return self.get_paginated_response(QuoteSerializer(page, many=True).data)

    @extend_schema(request=RequestSerializer, responses={201: QuoteSerializer})
    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        try:
            quote = reservation_quote(tenant=tenant, **_request_data(request))
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return created(request, QuoteSerializer(quote).data, reverse("api-quote", args=[quote.pk]))


class QuoteDetailView(APIView):
    @extend_schema(responses=QuoteSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(QuoteSerializer(_quote_of(request, pk)).data)


class QuoteAcceptView(APIView):
    """Accept a quote: 201 with the reservation (paid now). A quote that cannot be booked as it
    stands (expired, or the market moved) is not booked in its place: 409 with the new quote to
    review (``rebook=False``); a quote that is no longer open: 409 with the quote as it is."""

    @extend_schema(request=None, responses={201: ReservationSerializer, 409: QuoteConflictSerializer},
                   parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request, pk: int) -> Response:
        quote = _quote_of(request, pk)
        try:
            r = reservation_accept(quote=quote, user=request.user, rebook=False)
        except QuoteMoved as exc:
            body = {"detail": exc.message_dict["quote"][0], "quote": QuoteSerializer(exc.quote).data if exc.quote else None}
            return Response(body, status=status.HTTP_409_CONFLICT)
        except StateConflict as exc:
            quote.refresh_from_db()
            body = {"detail": " ".join(exc.message_dict.get("quote", exc.messages)), "quote": QuoteSerializer(quote).data}
            return Response(body, status=status.HTTP_409_CONFLICT)
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return created(request, ReservationSerializer(r).data, self.location_of({"id": r.pk}))

    @staticmethod
    def location_of(body: dict[str, Any]) -> str:
        return reverse("api-reservation", args=[body["id"]])


class QuoteDeclineView(APIView):
    @extend_schema(request=None, responses=QuoteSerializer)
    def post(self, request: Request, pk: int) -> Response:
        try:
            quote = reservation_decline(quote=_quote_of(request, pk))
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return Response(QuoteSerializer(quote).data)


class RequestView(APIView):
    """The one-shot request: accepted iff V covers the price (201 with the reservation),
    else 200 with ``accepted: false`` and the declined quote."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(request=RequestSerializer, parameters=[IDEMPOTENCY_PARAMETER],
                   responses={201: RequestOutSerializer, 200: RequestOutSerializer})
    @idempotent
    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        try:
            result = reservation_request(tenant=tenant, user=request.user, **_request_data(request))
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        body = {
            "accepted": result.accepted, "quote": QuoteSerializer(result.quote).data,
            "reservation": ReservationSerializer(result.reservation).data if result.reservation else None,
        }
        if result.reservation is not None:
            return created(request, body, self.location_of(body))
        return Response(body, status=status.HTTP_200_OK)

    @staticmethod
    def location_of(body: dict[str, Any]) -> str:
        return reverse("api-reservation", args=[body["reservation"]["id"]])


class ReservationListView(generics.GenericAPIView):
    """The caller's reservations, newest first, paginated."""

    serializer_class = ReservationSerializer
    queryset = Reservation.objects.none()  # the schema's model; get() reads the caller's reservations
    ordering_fields = ("id", "start", "price")
    ordering_default = "-id (newest first)"

    @extend_schema(responses=ReservationSerializer(many=True))
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(rsel.tenant_reservations(tenant=request_tenant(request))))
        return self.get_paginated_response(ReservationSerializer(page, many=True).data)


class ReservationDetailView(APIView):
    """One of the caller's reservations (another tenant's: 404)."""

    @extend_schema(responses=ReservationSerializer)
    def get(self, request: Request, pk: int) -> Response:
        reservation = get_object_or_404(rsel.tenant_reservations(tenant=request_tenant(request)), pk=pk)
        return Response(ReservationSerializer(reservation).data)


class PriceCurveView(APIView):
    """The next unit's price per coming slot, and promised units (``?resource=map&slots=240``)."""

    @extend_schema(
        parameters=[OpenApiParameter("resource", str, description="Resource type name (default: the first)."),
                    OpenApiParameter("slots", int, description="Coming slots to price, 1 to 100,000 (default 240).")],
        responses={200: PriceCurveSerializer},
    )
    def get(self, request: Request) -> Response:
        market = selectors.market_default()
        types = selectors.resource_types_of(market=market)
        name = request.query_params.get("resource") or types[0].name
        rt = next((t for t in types if t.name == name), None)
        if rt is None:
            raise ValidationError({"resource": f"Unknown resource type '{name}'."})
        try:
            slots = int(request.query_params.get("slots", 240))
        except ValueError:
            raise ValidationError({"slots": "Enter a whole number of slots."}) from None
        curve = rsel.price_curve(market=market, resource_type=rt, slots=max(1, min(slots, 100_000)))
        totals = rsel.reservation_totals(market=market)
        totals |= {k: money_text(totals[k]) for k in ("revenue", "welfare", "requested_value")}  # money: 4-place strings
        return Response(curve.__dict__ | {"totals": totals})


# --- cluster-facing API (paper 001, Sec. 2.3.2) ------------------------------------------------


class IsClusterManager(BasePermission):
    """Members of the ``cluster-manager`` group (and superusers); tenants get 403."""

    message = "Only a cluster manager may call the cluster interface."

    def has_permission(self, request: Request, view: Any) -> bool:
        return roles.is_cluster_manager(request.user)


def cluster_manager_group() -> Group:
    """The role, created on first use."""
    return Group.objects.get_or_create(name=CLUSTER_MANAGER)[0]


class ClusterAllocationView(APIView):
    """getCurrentAllocation: units per running job now, plus empty allocations for booked
    jobs inside their window; ``ETag`` / ``If-None-Match`` give 304 when nothing changed."""

    permission_classes = (IsClusterManager,)

    @extend_schema(responses={200: ClusterAllocationSerializer})
    def get(self, request: Request) -> Response:
        body = rsel.cluster_allocation(market=selectors.market_default())
        etag = body["etag"]
        if request.headers.get("If-None-Match") == etag:
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": etag})
        return Response(body, headers={"ETag": etag})

    get.etag = True  # type: ignore[attr-defined]  # If-None-Match, ETag and 304 in the schema (api.operations)


class UpdateSerializer(StrictJSON, serializers.Serializer):
    capacity = serializers.DictField(child=serializers.IntegerField(min_value=1), required=False,
                                     help_text="Resource type name -> units now under the cluster's management.")
    terminated = serializers.ListField(child=serializers.IntegerField(), required=False, help_text="Ids of jobs that ended.")

    # The paper's update may also carry the jobs' actual consumption and waiting tasks. The market's
    # cluster is its own simulated one, which counts both itself; a field it cannot act on is refused,
    # not acknowledged and dropped.
    NOT_ACCEPTED = ("consumption", "pending")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        sent = [name for name in self.NOT_ACCEPTED if name in self.initial_data]
        if sent:
            raise ValidationError(dict.fromkeys(sent, "Not accepted: the market's simulated cluster counts the jobs' units in use "
                                                      "and waiting tasks itself."))
        return attrs


class ClusterUpdateView(APIView):
    """update (paper 001, Sec. 2.3.2): capacity changes and terminations re-plan
    (``reservations.services.cluster_update``)."""

    permission_classes = (IsClusterManager,)
    parser_classes = (SafeJSONParser,)  # JSON only: one request schema, one content type

    @extend_schema(request=UpdateSerializer, responses={200: UpdateOutSerializer})
    def post(self, request: Request) -> Response:
        data = UpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            update = cluster_update(market=selectors.market_default(), capacity=data.validated_data.get("capacity", {}),
                                    terminated=data.validated_data.get("terminated", []), user=request.user)
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return Response({"capacity": update.capacity, "terminated": update.terminated, "replanned": True})
