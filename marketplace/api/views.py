"""REST API views: thin, calling services for writes and selectors for reads."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema
from rest_framework import generics, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace import selectors, selectors_abacus, selectors_visibility
from marketplace.api import job_list
from marketplace.api import serializers as s
from marketplace.api.conditional import conditional, marked_market
from marketplace.api.conventions import SeriesFilter
from marketplace.api.fields import currency
from marketplace.api.idempotency import IDEMPOTENCY_PARAMETER, idempotent
from marketplace.api.parsers import SafeJSONParser
from marketplace.models.accounts import LedgerEntry, Tenant
from marketplace.models.allocation import FairnessSample, MarketSample, PriceSample
from marketplace.models.jobs import Job
from marketplace.models.market import Market
from marketplace.services.bids import WorkItem, bid_submit, job_cancel
from marketplace.services.config import market_configure


def _tenant(request: Request) -> Tenant:
    tenant = getattr(request.user, "tenant", None)
    if tenant is None:
        raise PermissionDenied("This account is not a tenant: it cannot hold jobs.")
    return tenant


def _market(tenant: Tenant, request: Request | None = None) -> Market:
    """The tenant's market without its stored engine: from the marks ``@conditional`` read for
    ``request`` if it did, else one query; remembered on the tenant for the rest of the request."""
    cached = tenant._state.fields_cache.get("market")
    if cached is None:
        cached = (marked_market(request, tenant.market_id) if request is not None else None) or (
            Market.objects.defer("engine_state").get(pk=tenant.market_id))
        tenant._state.fields_cache["market"] = cached
    return cached


def _default_market(request: Request) -> Market:
    """``selectors.market_default()``, from the marks ``@conditional`` read for ``request`` if it did."""
    return marked_market(request) or selectors.market_default()


def _service_errors(exc: DjangoValidationError) -> ValidationError:
    return ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages})


class JobFilter(filters.FilterSet):
    status = filters.MultipleChoiceFilter(choices=Job.Status.choices)

    class Meta:
        model = Job
        fields = ("status", "utility")


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The caller's jobs (bids). POST submits a bid; other tenants' jobs are invisible (404)."""

    serializer_class = s.JobSerializer
    filterset_class = JobFilter
    ordering_fields = ("id", "sim_submit_time", "budget", "status")
    ordering_default = "-id (newest first)"
    lookup_value_regex = r"[0-9]+"
    parser_classes = (SafeJSONParser,)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):  # schema generation: the model, no request
            return Job.objects.none()
        if self.action == "cancel":  # only the job itself: job_cancel locks and reads it again
            return Job.objects.filter(tenant=_tenant(self.request))
        return selectors.tenant_jobs(tenant=_tenant(self.request))

    def get_serializer_context(self) -> dict:
        ctx = super().get_serializer_context()
        tenant = getattr(self.request.user, "tenant", None)
        if tenant is not None:
            market = _market(tenant)
            ctx["shares"] = selectors.current_shares(market=market)
            ctx["queue_paths"] = selectors.queue_paths(market=market)
        return ctx

    def filter_queryset(self, queryset):  # type: ignore[no-untyped-def]
        """No filter and no ordering asked (the pollers' usual request): the list as it is, newest
        first (``selectors.tenant_jobs``), without building the filter form."""
        if self.action == "list" and not set(self.request.query_params) - {"page", "page_size", "format"}:
            return queryset
        return super().filter_queryset(queryset)

    @conditional(scope="user", market="tenant")
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        tenant = _tenant(request)
        rows = self.paginate_queryset(self.filter_queryset(job_list.page_values(self.get_queryset())))
        return self.get_paginated_response(job_list.job_dicts(list(rows), _market(tenant, request)))

    def retrieve(self, request: Request, *args: object, **kwargs: object) -> Response:
        job = self.get_object()
        ctx = self.get_serializer_context() | {"money": selectors.job_money(job_ids=[job.pk]), "slo": self._slo([job])}
        return Response(s.JobSerializer(job, context=ctx).data)

    def _slo(self, jobs: list[Job]) -> dict[int, object]:
        slo_jobs = [j for j in jobs if j.min_utility is not None]
        if not slo_jobs:
            return {}
        return dict(selectors_abacus.slo_status(market=_market(_tenant(self.request)), jobs=slo_jobs))

    @extend_schema(request=s.BidSerializer, responses={201: s.JobSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:  # kwargs: the router's .json suffix
        tenant = _tenant(request)
        bid = s.BidSerializer(data=request.data)
        bid.is_valid(raise_exception=True)
        d = bid.validated_data
        work = [WorkItem(w["resource_type"], w["tasks"], w["task_duration"], w["weight"]) for w in d["work"]]
        try:
            job = bid_submit(tenant=tenant, budget=d["budget"], work=work, utility=d["utility"], name=d["name"], user=request.user,
                             min_utility=d.get("min_utility"), job_class=d.get("job_class", ""),
                             use_adopted_utility=d.get("use_adopted_utility", False))
        except DjangoValidationError as exc:
            raise _service_errors(exc) from None
        return Response(job_list.placed_job_dict(job, list(job.work.all()), job.market), status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: s.JobSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @action(detail=True, methods=["post"])
    @idempotent
    def cancel(self, request: Request, pk: str | None = None, **kwargs: object) -> Response:
        job = self.get_object()
        try:
            job = job_cancel(job=job, user=request.user)
        except DjangoValidationError as exc:
            raise _service_errors(exc) from None
        return Response(job_list.cancelled_job_dict(job, job.market))


class MarketStateView(APIView):
    """Market state: clock, versions, job counts, utilisation, latest prices and clearing.

    ``PATCH`` (staff only) changes the stages (``mechanism``, ``fairshare_policy``,
    ``dispatch_mode``) and knobs through the audited ``market_configure``.
    """

    parser_classes = (SafeJSONParser,)

    @extend_schema(responses=s.MarketStateSerializer)
    @conditional(scope="market")
    def get(self, request: Request) -> Response:
        return Response(selectors.market_overview(market=_default_market(request)))

    @extend_schema(request=s.MarketConfigSerializer, responses=s.MarketStateSerializer)
    def patch(self, request: Request) -> Response:
        if not request.user.is_staff:
            raise PermissionDenied("Only staff may change the market's configuration.")
        data = s.MarketConfigSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        reason = changes.pop("reason", "") or "API"
        market = selectors.market_default()
        try:
            market_configure(market=market, user=request.user, reason=reason, **changes)
        except DjangoValidationError as exc:
            raise _service_errors(exc) from None
        market.refresh_from_db()
        return Response(selectors.market_overview(market=market))


class AllocationView(APIView):
    """The current allocation (paper 001, Sec. 2.3.2 current_allocation).

    Staff and cluster managers get every active job (``scope`` "all"); a tenant gets its
    own jobs and, for the others, only the per-queue totals (``scope`` "own"; see
    ``selectors_visibility``)."""

    @extend_schema(responses=s.AllocationSerializer)
    @conditional(scope="user")
    def get(self, request: Request) -> Response:
        market = _default_market(request)
        view = selectors_visibility.allocation_for(market=market, viewer=selectors_visibility.viewer_of(user=request.user))
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
    """A time series: filters and ordering of ``api.conventions.SeriesFilter``."""

    filterset_class = SeriesFilter
    ordering_fields = ("sim_time",)
    ordering_default = "sim_time (oldest first); -sim_time for newest first"


class FairnessSeriesView(_SeriesView):
    """Fairness samples per leaf queue (paper 002, Eqs. 1-5), oldest first (``ordering=-sim_time``:
    newest first), paginated; ``latest=true`` gives only the newest sample time."""

    serializer_class = s.FairnessSampleSerializer

    def get_serializer_context(self) -> dict:
        market = _default_market(self.request)
        return super().get_serializer_context() | {"queue_paths": selectors.queue_paths(market=market)}

    @conditional(scope="market", depends="ticks")
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return FairnessSample.objects.none()
        return selectors.fairness_series(market=_default_market(self.request))


class MarketSeriesView(_SeriesView):
    """Sharing benefit and loss and utilisation per resource type over simulated time (filters as
    the fairness series)."""

    serializer_class = s.MarketSampleSerializer

    @conditional(scope="market", depends="ticks")
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return MarketSample.objects.none()
        return selectors.market_series(market=_default_market(self.request))


class PriceSeriesView(_SeriesView):
    """Implied unit price per resource type at each clearing (sum of sub-budgets / capacity, money
    per slot); ``latest=true`` gives the current prices in one request."""

    serializer_class = s.PriceSampleSerializer

    @conditional(scope="market", depends="samples")
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return PriceSample.objects.none()
        return selectors.price_series(market=_default_market(self.request))


class AccountView(APIView):
    """The caller's balance: available and held."""

    @extend_schema(responses=s.AccountSerializer)
    def get(self, request: Request) -> Response:
        tenant = _tenant(request)
        acct = selectors.account_of(tenant=tenant)
        body = {"tenant": tenant.name, "currency": currency(), "available": acct.available, "held": acct.held}
        return Response(s.AccountSerializer(body).data)


class LedgerView(generics.ListAPIView):
    """The caller's ledger entries, newest first."""

    serializer_class = s.LedgerEntrySerializer
    filterset_fields = ("kind",)
    ordering_fields = ("id", "created_at", "amount")
    ordering_default = "-id (newest first)"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):
            return LedgerEntry.objects.none()
        return selectors.tenant_ledger(tenant=_tenant(self.request))
