"""Staff API: every tenant's jobs, and crediting or debiting an account through the ledger.

``GET /api/staff/jobs/`` (staff and cluster managers: read-only, every tenant) and
``POST /api/staff/ledger/adjust/`` (staff only; ``Idempotency-Key`` like the other money
POSTs; field errors per field; one audited ledger entry, ``ledger.services.account_adjust``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace.api.conditional import conditional
from marketplace.api.conventions import (
    SeriesFilter,
    default_market,
    of_resource,
    request_tenant,
    series_resource_names,
    service_errors,
)
from marketplace.api.fields import (
    MONEY_PLACES,
    MONEY_QUANTUM,
    StrictDecimalField,
    StrictJSON,
    currency,
    money_format,
    money_help,
    money_text,
)
from marketplace.api.idempotency import IDEMPOTENCY_PARAMETER, idempotent
from marketplace.api.parsers import SafeJSONParser
from marketplace.api.rows import answer_rows, lookups
from marketplace.auction.serializers import JobSerializer
from marketplace.dashboard.serializers import (
    AccountSerializer,
    AllocationSerializer,
    FairnessSampleSerializer,
    LedgerEntrySerializer,
    MarketConfigSerializer,
    MarketSampleSerializer,
    MarketStateSerializer,
    PriceSampleSerializer,
    RateSampleSerializer,
)
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.selectors import account_of, job_money, tenant_ledger
from marketplace.ledger.services import MAX_ADJUSTMENT, REASON_MAX, REASON_MIN, account_adjust
from marketplace.market import roles, selectors, visibility
from marketplace.market.models.allocation import FairnessSample, MarketSample, PriceSample, RateSample
from marketplace.market.models.jobs import Job
from marketplace.market.models.queues import Queue
from marketplace.market.models.tenants import Tenant
from marketplace.market.prices import rate_series
from marketplace.market.services.config import market_configure, reserve_prices_set


class SeesAllTenants(BasePermission):
    message = "Only staff and cluster managers may read every tenant's jobs."

    def has_permission(self, request: Request, view: Any) -> bool:
        return roles.sees_all_tenants(request.user)


class IsStaff(BasePermission):
    message = "Only staff may credit or debit an account."

    def has_permission(self, request: Request, view: Any) -> bool:
        return roles.is_staff(request.user)


class StaffJobSerializer(JobSerializer):
    tenant = serializers.CharField(source="tenant.name", help_text="The job's tenant.")

    class Meta(JobSerializer.Meta):
        fields = ("id", "tenant", *JobSerializer.Meta.fields[1:])


class StaffJobFilter(filters.FilterSet):
    status = filters.MultipleChoiceFilter(choices=Job.Status.choices)
    tenant = filters.ModelChoiceFilter(field_name="tenant", to_field_name="name", help_text="A tenant's name.",
                                       queryset=lambda request: Tenant.objects.all())

    class Meta:
        model = Job
        fields = ("status", "tenant", "utility")


class StaffJobsView(generics.ListAPIView):
    """Every tenant's jobs, newest first (staff and cluster managers)."""

    permission_classes = (SeesAllTenants,)
    serializer_class = StaffJobSerializer
    filterset_class = StaffJobFilter
    ordering_fields = ("id", "sim_submit_time", "budget", "status")
    ordering_default = "-id (newest first)"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return Job.objects.none()
        viewer = visibility.viewer_of(user=self.request.user)
        return visibility.staff_job_list(market=selectors.market_default(), viewer=viewer).select_related("tenant")

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        market = selectors.market_default()
        ids = [j.pk for j in page]
        ctx = self.get_serializer_context() | {
            "money": job_money(job_ids=ids), "shares": selectors.current_shares(market=market, job_ids=ids),
            "queue_paths": selectors.queue_paths(market=market),
        }
        return self.get_paginated_response(StaffJobSerializer(page, many=True, context=ctx).data)


class AdjustSerializer(StrictJSON, serializers.Serializer):
    tenant = serializers.CharField(max_length=100, help_text="The tenant's name.")
    direction = serializers.ChoiceField(choices=["credit", "debit"],
                                        help_text="credit adds to the available balance, debit takes from it.")
    amount = StrictDecimalField(max_digits=18, decimal_places=MONEY_PLACES, min_value=MONEY_QUANTUM,
                                max_value=MAX_ADJUSTMENT, validators=[money_format(MAX_ADJUSTMENT)],
                                help_text=money_help("The amount, at most 4 decimal places."))
    reason = serializers.CharField(min_length=REASON_MIN, max_length=REASON_MAX, help_text="Why: kept in the tenant's ledger.")


class AdjustOutSerializer(serializers.Serializer):
    entry = LedgerEntrySerializer(help_text="The ledger entry booked.")
    tenant = serializers.CharField()
    created_by = serializers.CharField(help_text="The staff member who booked it.")


class LedgerAdjustView(APIView):
    """Credit or debit a tenant's available balance with a reason (staff; one audited ledger entry)."""

    permission_classes = (IsStaff,)
    parser_classes = (SafeJSONParser,)

    @extend_schema(request=AdjustSerializer, responses={201: AdjustOutSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request) -> Response:
        data = AdjustSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        tenant = Tenant.objects.filter(market=selectors.market_default(), name=d["tenant"]).first()
        if tenant is None:
            raise ValidationError({"tenant": f"No tenant named '{d['tenant']}'."})
        try:
            entry = account_adjust(tenant=tenant, direction=d["direction"], amount=d["amount"], reason=d["reason"], user=request.user)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        body = {"entry": LedgerEntrySerializer(entry).data, "tenant": tenant.name, "created_by": request.user.get_username()}
        return Response(body, status=status.HTTP_201_CREATED)


class MarketStateView(APIView):
    """Market state: clock, versions, job counts, utilisation, latest prices and clearing.

    ``PATCH`` (staff only) changes the stages (``mechanism``, ``fairshare_policy``,
    ``dispatch_mode``) and knobs through the audited ``market_configure``.
    """

    parser_classes = (SafeJSONParser,)

    @extend_schema(responses=MarketStateSerializer)
    @conditional(scope="market")
    def get(self, request: Request) -> Response:
        return Response(selectors.market_overview(market=default_market(request)))

    @extend_schema(request=MarketConfigSerializer, responses=MarketStateSerializer)
    def patch(self, request: Request) -> Response:
        if not request.user.is_staff:
            raise PermissionDenied("Only staff may change the market's configuration.")
        data = MarketConfigSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        reason = changes.pop("reason", "") or "API"
        reserves = changes.pop("reserve_prices", None)
        market = selectors.market_default()
        try:
            with transaction.atomic():  # the knobs and the reserve prices together, or nothing
                market_configure(market=market, user=request.user, reason=reason, **changes)
                if reserves is not None:
                    reserve_prices_set(market=market, prices=reserves, user=request.user, reason=reason)
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        market.refresh_from_db()
        return Response(selectors.market_overview(market=market))


class AllocationView(APIView):
    """The current allocation (paper 001, Sec. 2.3.2 current_allocation).

    Staff and cluster managers get every active job (``scope`` "all"); a tenant gets its
    own jobs and, for the others, only the per-queue totals (``scope`` "own"; see
    ``market.visibility``)."""

    @extend_schema(responses=AllocationSerializer)
    @conditional(scope="user")
    def get(self, request: Request) -> Response:
        market = default_market(request)
        view = visibility.allocation_for(market=market, viewer=visibility.viewer_of(user=request.user))
        snap = selectors.latest_snapshot(market=market)
        return Response({
            "sim_time": market.sim_time,
            "state_version": market.state_version,
            "cleared_version": market.cleared_version,
            "snapshot": snap.pk if snap else None,
            "scope": view["scope"],
            "jobs": [allocation_entry(r) for r in view["jobs"]],  # AllocationEntrySerializer's output, without its walk per entry
            "queues": view["queues"],
        })


def allocation_entry(row: selectors.RunningUnits) -> dict[str, object]:
    """``AllocationEntrySerializer(row).data``: the same keys and types (ints, str, dicts of int and float)."""
    return {"job_id": int(row.job_id), "tenant": str(row.tenant), "queue": str(row.queue), "status": str(row.status),
            "running": {str(k): int(v) for k, v in row.running.items()},
            "pending": {str(k): int(v) for k, v in row.pending.items()},
            "shares": {str(k): float(v) for k, v in row.shares.items()}}


class _SeriesView(generics.ListAPIView):
    """A time series: filters and ordering of ``api.conventions.SeriesFilter``.

    ``plain_rows``: the page is written from value rows (``api.rows``) with the serializer's fields,
    not by the serializer's walk over model instances; ``computed`` gives its method fields."""

    filterset_class = SeriesFilter
    ordering_fields = ("sim_time",)
    ordering_default = "sim_time (oldest first); -sim_time for newest first"
    plain_rows = False
    row_extra: tuple[str, ...] = ()

    def filter_queryset(self, queryset):  # type: ignore[no-untyped-def]
        """Nothing asked but ``resource`` and paging (the pollers' usual request): that filter alone,
        as the filter set applies it (the value stripped; empty: every type), without building its form."""
        params = self.request.query_params
        if set(params) - {"resource", "page", "page_size", "format"}:
            return super().filter_queryset(queryset)
        value = (params.get("resource") or "").strip()
        if not value:
            return queryset
        return of_resource(queryset, value, series_resource_names(default_market(self.request)))

    def computed(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {}

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        if not self.plain_rows:
            return super().list(request, *args, **kwargs)
        serializer = self.get_serializer_class()
        rows = self.filter_queryset(self.get_queryset()).values(*lookups(serializer, *self.row_extra))
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(answer_rows(serializer, page if page is not None else rows, self.computed()))


class FairnessSeriesView(_SeriesView):
    """Fairness samples per leaf queue (paper 002, Eqs. 1-5), oldest first (``ordering=-sim_time``:
    newest first), paginated; ``latest=true`` gives only the newest sample time."""

    serializer_class = FairnessSampleSerializer
    plain_rows = True
    row_extra = ("queue_id",)

    def computed(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        paths = selectors.queue_paths(market=default_market(self.request))  # FairnessSampleSerializer.get_queue's
        return {"queue": lambda row: paths[row["queue_id"]] if row["queue_id"] in paths else Queue.objects.get(pk=row["queue_id"]).path}

    def get_serializer_context(self) -> dict:
        market = default_market(self.request)
        return super().get_serializer_context() | {"queue_paths": selectors.queue_paths(market=market)}

    @conditional(scope="market", depends="ticks")
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return FairnessSample.objects.none()
        return selectors.fairness_series(market=default_market(self.request))


class MarketSeriesView(_SeriesView):
    """Sharing benefit and loss and utilisation per resource type over simulated time (filters as
    the fairness series)."""

    serializer_class = MarketSampleSerializer
    plain_rows = True

    @conditional(scope="market", depends="ticks")
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return MarketSample.objects.none()
        return selectors.market_series(market=default_market(self.request))


class PriceSeriesView(_SeriesView):
    """Implied unit price per resource type at each clearing (sum of sub-budgets / capacity, money
    per slot); ``latest=true`` gives the current prices in one request."""

    serializer_class = PriceSampleSerializer
    plain_rows = True

    @conditional(scope="market", depends="samples")
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return PriceSample.objects.none()
        return selectors.price_series(market=default_market(self.request))


class RateSeriesView(_SeriesView):
    """The spot market's realised rate per resource type over simulated time: what auction jobs that
    finished or were cancelled paid for the slot-seconds they used (money per slot-second; filters
    as the other series). The market's reference price: reservation and deadline quotes are
    anchored to it (docs/economy.md)."""

    serializer_class = RateSampleSerializer

    @conditional(scope="market", depends="all")
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return RateSample.objects.none()
        return rate_series(market=default_market(self.request))


class AccountView(APIView):
    """The caller's balance: available and held."""

    @extend_schema(responses=AccountSerializer)
    def get(self, request: Request) -> Response:
        tenant = request_tenant(request)
        acct = account_of(tenant=tenant)
        # AccountSerializer(...).data, written without building the serializer on every poll
        return Response({"tenant": str(tenant.name), "currency": str(currency()), "available": money_text(acct.available),
                         "held": money_text(acct.held)})


class LedgerView(generics.ListAPIView):
    """The caller's ledger entries, newest first."""

    serializer_class = LedgerEntrySerializer
    filterset_fields = ("kind",)
    ordering_fields = ("id", "created_at", "amount")
    ordering_default = "-id (newest first)"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return LedgerEntry.objects.none()
        return tenant_ledger(tenant=request_tenant(self.request))
