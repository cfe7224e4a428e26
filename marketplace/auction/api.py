"""REST API for Abacus's tenant extras (paper 000, Secs. 5-6): utility fits and the price preview."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from functools import lru_cache
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import connection
from django.db.models import QuerySet
from django.http import Http404
from django.urls import reverse
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, Throttled, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace.api.answers import PreviewOut
from marketplace.api.conditional import conditional
from marketplace.api.conventions import Pagination, created, request_tenant, service_errors, tenant_market
from marketplace.api.fields import StrictJSON, money_text, representations
from marketplace.api.idempotency import IDEMPOTENCY_PARAMETER, idempotent, in_idempotent_call
from marketplace.api.parsers import SafeJSONParser
from marketplace.auction.admission import PreviewBusy, preview_slot
from marketplace.auction.models import WorkItem
from marketplace.auction.selectors import ClassFit, Preview, bid_preview, slo_status, utility_fits
from marketplace.auction.serializers import BidSerializer, JobSerializer, JobWorkSerializer, WorkItemSerializer, plain_bid
from marketplace.auction.services import bid_submit, bid_terms, bid_work_errors, job_cancel, utility_fit_adopt
from marketplace.infra import instances
from marketplace.infra.rows import any_of, column, table
from marketplace.ledger.selectors import job_money
from marketplace.market import selectors
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.models.tenants import Tenant


class AdoptSerializer(StrictJSON, serializers.Serializer):
    job_class = serializers.CharField(max_length=120)


def _weights(text: str) -> serializers.DictField:
    return serializers.DictField(child=serializers.FloatField(), allow_null=True, help_text=text)


class AdoptedOutSerializer(serializers.Serializer):
    """Weights adopted for a job class (shape only, for the schema)."""

    job_class = serializers.CharField(help_text="The job class.")
    utility = serializers.ChoiceField(choices=Job.Utility.choices, help_text="The utility kind fitted.")
    weights = serializers.DictField(child=serializers.FloatField(), help_text="Resource type name -> weight w >= 0.")
    spread = serializers.DictField(child=serializers.FloatField(),
                                   help_text="Resource type name -> bootstrap std of the normalised weight.")
    jobs = serializers.IntegerField(help_text="Completed jobs the fit used, a count.")


class UtilityFitOutSerializer(serializers.Serializer):
    """A job class and its fitted utility weights (paper 000, Sec. 5, Eq. 2; shape only, for the schema)."""

    job_class = serializers.CharField(help_text="The job class.")
    utility = serializers.ChoiceField(choices=Job.Utility.choices, help_text="The utility kind most of its jobs bid.")
    jobs = serializers.IntegerField(help_text="k: completed jobs with a measured response time, a count.")
    jobs_needed = serializers.IntegerField(help_text="m: the fewest jobs a fit needs, a count.")
    weights = _weights("Resource type name -> fitted weight (null while k < m).")
    normalised = _weights("Resource type name -> weight normalised to sum 1 (null while k < m).")
    spread = _weights("Resource type name -> bootstrap std of the normalised weight (null while k < m).")
    intercept = serializers.FloatField(allow_null=True, help_text="The fit's intercept (null while k < m).")
    rms_residual = serializers.FloatField(allow_null=True, help_text="Root mean square residual, utility units (null while k < m).")
    adopted = serializers.DictField(child=serializers.FloatField(), allow_null=True,
                                    help_text="The weights adopted for new bids of the class (null if none).")


def _fit_json(c: ClassFit) -> dict[str, Any]:
    fit = c.fit
    return {
        "job_class": c.job_class, "utility": c.utility, "jobs": c.jobs, "jobs_needed": c.needed,
        "weights": None if fit is None else dict(zip(c.types, fit.weights.tolist(), strict=True)),
        "normalised": None if fit is None else dict(zip(c.types, fit.normalised.tolist(), strict=True)),
        "spread": None if fit is None else dict(zip(c.types, fit.spread.tolist(), strict=True)),
        "intercept": None if fit is None else fit.intercept,
        "rms_residual": None if fit is None else fit.rms_residual,
        "adopted": c.adopted,
    }


class UtilityFitsView(APIView):
    """The caller's job classes and their fitted utility weights (paper 000, Sec. 5, Eq. 2)."""

    @extend_schema(responses=UtilityFitOutSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response([_fit_json(c) for c in utility_fits(tenant=request_tenant(request))])


def _valid_bid(request: Request, tenant: Tenant) -> tuple[dict[str, Any], list[WorkItem]]:
    """The request's bid, checked (every field error at once, as a 400), and its work per resource type."""
    d = plain_bid(request.data)
    if d is None:
        bid = BidSerializer(data=request.data)
        if not bid.is_valid():
            raise ValidationError(_bid_errors(request, tenant, bid))
        d = bid.validated_data
    return d, [WorkItem(w["resource_type"], w["tasks"], w["task_duration"], w["weight"]) for w in d["work"]]


def _bid_errors(request: Request, tenant: Any, bid: BidSerializer) -> dict[str, Any]:
    """The shape errors of a bid and, when its work is well formed, the work's errors against
    the market (unknown resource types): every field error at once."""
    errors = dict(bid.errors)
    items = WorkItemSerializer(data=request.data.get("work"), many=True) if "work" not in errors else None
    if items is not None and items.is_valid():
        work = [WorkItem(w["resource_type"], w["tasks"], w["task_duration"], w["weight"]) for w in items.validated_data]
        errors.update(bid_work_errors(tenant=tenant, work=work))
    return errors


class UtilityAdoptView(APIView):
    """Adopt the current fit of a job class for new bids (``use_adopted_utility`` on a bid)."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(request=AdoptSerializer, responses={201: AdoptedOutSerializer})
    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        data = AdoptSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            adopted = utility_fit_adopt(tenant=tenant, job_class=data.validated_data["job_class"], user=request.user)
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        body = {"job_class": adopted.job_class, "utility": adopted.utility, "weights": adopted.weights, "spread": adopted.spread,
                "jobs": adopted.jobs}
        return created(request, body, reverse("api-utility-fits"))  # the fits list shows it as adopted


def _preview_json(preview: Preview) -> dict[str, Any]:
    at = preview.at_entered
    return {
        "estimate": True, "note": preview.note, "budget": money_text(preview.entered),
        "shares": dict(zip(preview.types, at.shares.tolist(), strict=True)),
        "finish_s": at.finish_s, "in_pool": at.in_pool, "converged": at.converged,
        "paid_rate": preview.paid_rate(preview.entered), "refused": preview.refused(preview.entered), "work": preview.work,
        "suggested": None if preview.suggested is None else {
            "budget": money_text(preview.suggested), "finish_s": preview.at_suggested.finish_s if preview.at_suggested else None,
            "price_level": preview.price_level, "work": preview.work, "minimum": money_text(preview.minimum),
            "paid_rate": preview.paid_rate(preview.suggested),
        },
        "curve": [row | {"budget": money_text(row["budget"]), "sub_budgets": {k: money_text(v) for k, v in row["sub_budgets"].items()}}
                  for row in preview.rows()],  # amounts in the API's money format
    }


class BidPreviewView(APIView):
    """Dry run of a bid: the share per resource type and the estimated finish time (simulated
    seconds from now) its budget would buy in the market as it stands, and the same at 1/8 .. 8
    times the budget. Computed by the market's auction on a copy of the current state; nothing
    is placed, held or stored. Body: as ``POST /api/jobs/``."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(request=BidSerializer, responses=PreviewOut)
    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        d, work = _valid_bid(request, tenant)
        try:
            _, work, utility = bid_terms(tenant=tenant, name=d.get("name", ""), job_class=d.get("job_class") or "", work=work,
                                         utility=d["utility"], use_adopted_utility=d.get("use_adopted_utility", False))
            with preview_slot(request.user.pk):
                preview = bid_preview(tenant=tenant, budget=float(d["budget"]), work=work, utility=utility,
                                      min_utility=d.get("min_utility"))
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        except PreviewBusy as busy:
            raise (Throttled(busy.wait, str(busy)) if busy.mine else PreviewsBusy(busy)) from None
        return Response(_preview_json(preview))


class PreviewsBusy(APIException):
    """503 with ``Retry-After``: every site slot for previews is taken (``auction.admission``)."""

    status_code = 503
    default_code = "previews_busy"

    def __init__(self, busy: PreviewBusy) -> None:
        super().__init__(str(busy))
        self.wait = busy.wait  # DRF's handler turns it into Retry-After


class JobFilter(filters.FilterSet):
    status = filters.MultipleChoiceFilter(choices=Job.Status.choices)

    class Meta:
        model = Job
        fields = ("status", "utility")


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The caller's jobs (bids). POST submits a bid; other tenants' jobs are invisible (404)."""

    serializer_class = JobSerializer
    filterset_class = JobFilter
    ordering_fields = ("id", "sim_submit_time", "budget", "status")
    ordering_default = "-id (newest first)"
    lookup_value_regex = r"[0-9]+"
    parser_classes = (SafeJSONParser,)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        if getattr(self, "swagger_fake_view", False):  # schema generation: the model, no request
            return Job.objects.none()
        if self.action == "cancel":  # only the job itself: job_cancel locks and reads it again
            return Job.objects.filter(tenant=request_tenant(self.request))
        return selectors.tenant_jobs(tenant=request_tenant(self.request))

    def get_serializer_context(self) -> dict:
        ctx = super().get_serializer_context()
        tenant = getattr(self.request.user, "tenant", None)
        if tenant is not None:
            market = tenant_market(tenant)
            ctx["shares"] = selectors.current_shares(market=market)
            ctx["queue_paths"] = selectors.queue_paths(market=market)
        return ctx

    def filter_queryset(self, queryset):  # type: ignore[no-untyped-def]
        """No filter and no ordering asked (the pollers' usual request, and every cancel): the jobs as
        they are, newest first (``market.selectors.tenant_jobs``), without building the filter form."""
        if not set(self.request.query_params) - {"page", "page_size", "format"}:
            return queryset
        return super().filter_queryset(queryset)

    @conditional(scope="user", market="tenant")
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        tenant = request_tenant(request)
        rows = self._plain_page(request, tenant)
        if rows is None:
            rows = self.paginate_queryset(self.filter_queryset(page_values(self.get_queryset())))
        return self.get_paginated_response(job_dicts(list(rows), tenant_market(tenant, request)))

    def _plain_page(self, request: Request, tenant: Tenant) -> list[dict[str, Any]] | None:
        """The pollers' usual request (no filter, no ordering: the tenant's jobs newest first) as
        ``page_values`` rows, the page and the count in one statement built once (``infra.instances.newest_page``)
        instead of a COUNT and a page compiled by the ORM; None for any other request."""
        if set(request.query_params) - {"page", "page_size", "format"} or not isinstance(self.paginator, Pagination):
            return None
        names = page_names()
        return self.paginator.counted_page(
            request, lambda limit, offset: instances.newest_page(Job, names, limit=limit, offset=offset, tenant=tenant.pk))

    def retrieve(self, request: Request, *args: object, **kwargs: object) -> Response:
        job = self.get_object()
        ctx = self.get_serializer_context() | {"money": job_money(job_ids=[job.pk]), "slo": self._slo([job])}
        return Response(JobSerializer(job, context=ctx).data)

    def _slo(self, jobs: list[Job]) -> dict[int, object]:
        slo_jobs = [j for j in jobs if j.min_utility is not None]
        if not slo_jobs:
            return {}
        return dict(slo_status(market=tenant_market(request_tenant(self.request)), jobs=slo_jobs))

    @extend_schema(request=BidSerializer, responses={201: JobSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:  # kwargs: the router's .json suffix
        tenant = request_tenant(request)
        d, work = _valid_bid(request, tenant)
        try:
            job = bid_submit(tenant=tenant, budget=d["budget"], work=work, utility=d["utility"], name=d["name"], user=request.user,
                             min_utility=d.get("min_utility"), job_class=d.get("job_class", ""),
                             use_adopted_utility=d.get("use_adopted_utility", False),
                             savepoint=not in_idempotent_call(request))
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return created(request, placed_job_dict(job, list(job.work.all()), job.market), self.location_of({"id": job.pk}))

    def _job_to_cancel(self, request: Request, pk: str | None) -> Job:
        """``self.get_object()`` for a cancel: without query parameters (every cancel the clients send)
        the tenant's job by id from one statement built once (compiling the ORM's cost more than it ran)."""
        if pk is None or len(pk) > 9 or set(request.query_params) - {"page", "page_size", "format"}:
            return self.get_object()  # and an id past any column's range: the ORM's answer for it
        job = instances.find_row(Job, id=int(pk), tenant=request_tenant(request).pk)
        if job is None:
            raise Http404(f"No {Job._meta.object_name} matches the given query.")
        self.check_object_permissions(request, job)
        return job

    @staticmethod
    def location_of(body: dict[str, Any]) -> str:
        return reverse("api-job-detail", args=[body["id"]])


    @extend_schema(request=None, responses={200: JobSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @action(detail=True, methods=["post"])
    @idempotent
    def cancel(self, request: Request, pk: str | None = None, **kwargs: object) -> Response:
        job = self._job_to_cancel(request, pk)
        try:
            job = job_cancel(job=job, user=request.user, savepoint=not in_idempotent_call(request))
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return Response(cancelled_job_dict(job, list(job.work.all()), job.market))


# JobSerializer's plain model fields, in its order (queue, held, work, shares and slo are computed).
_COMPUTED = ("queue", "held", "work", "shares", "slo")


_WORK_FIELDS = ("tasks", "task_duration", "weight", "pending", "running", "done")


@lru_cache(maxsize=1)
def _fields() -> tuple[tuple[str, Any], ...]:
    fields = JobSerializer().fields
    return tuple((name, fields[name]) for name in JobSerializer.Meta.fields if name not in _COMPUTED)


@lru_cache(maxsize=1)
def _work_fields() -> tuple[tuple[str, Any], ...]:
    fields = JobWorkSerializer().fields
    return tuple((name, fields[name]) for name in _WORK_FIELDS)


@lru_cache(maxsize=1)
def page_names() -> tuple[str, ...]:
    """The columns of the value rows :func:`job_dicts` reads."""
    names = [name for name, _ in _fields()]
    return (*names, *(n for n in ("queue_id", "status", "utility") if n not in names))


def page_values(jobs: QuerySet[Job]) -> QuerySet[Any]:
    """``jobs`` (filtered, ordered) as the value rows :func:`job_dicts` reads."""
    return jobs.values(*page_names())


def job_dicts(rows: list[dict[str, Any]], market: Market) -> list[dict[str, Any]]:
    """The JSON of ``JobSerializer(many=True)`` for the jobs in ``rows`` (from :func:`page_values`)."""
    ids = [r["id"] for r in rows]
    if not ids:
        return []
    return _format(rows, market, _work_rows(ids), job_money(job_ids=ids), selectors.current_shares(market=market, job_ids=ids))


def placed_job_dict(job: Job, works: list[JobWork], market: Market) -> dict[str, Any]:
    """``JobSerializer(job).data`` for a bid placed in the current transaction, from the objects
    ``auction.services.bid_submit`` wrote instead of reading them back: its work rows are ``works``
    (with their resource types), all of its budget is held and nothing charged, and it has no
    share yet (no Plan has seen it: its clearing runs after the commit)."""
    return _format([_row(job)], market, _job_work_rows(job, works), {job.pk: (job.budget, Decimal("0"))}, {})[0]


def cancelled_job_dict(job: Job, works: list[JobWork], market: Market) -> dict[str, Any]:
    """``JobSerializer(job).data`` for a job ``auction.services.job_cancel`` has just cancelled (``job``
    as it returned it, read under the lock and updated, and ``works`` its work rows as read there,
    with their resource types): nothing is held any more (the whole hold was released); its share
    in the latest Plan is read."""
    return _format([_row(job)], market, _job_work_rows(job, works), {job.pk: (Decimal("0"), job.charged)},
                   selectors.current_shares(market=market, job_ids=[job.pk]))[0]


def _job_work_rows(job: Job, works: list[JobWork]) -> list[dict[str, Any]]:
    """``works`` (of ``job``, with their resource types) as the value rows :func:`_work_rows` reads."""
    return [{"job_id": job.pk, "resource_type__name": w.resource_type.name} | {n: getattr(w, n) for n in _WORK_FIELDS}
            for w in sorted(works, key=lambda w: (w.resource_type.stage, w.resource_type_id))]


def _row(job: Job) -> dict[str, Any]:
    """A model instance as the value row :func:`page_values` would read for it."""
    return {name: getattr(job, name) for name, _ in _fields()} | {"queue_id": job.queue_id, "status": job.status, "utility": job.utility}


def _work_rows(job_ids: list[int]) -> list[dict[str, Any]]:
    """The work rows of ``job_ids`` as ``JobWork.objects.filter(job_id__in=job_ids).order_by("resource_type__stage",
    "resource_type_id").values("job_id", "resource_type__name", *_WORK_FIELDS)`` reads them, in one plain
    statement (compiling that query cost more than running it, on every page of jobs)."""
    if not job_ids:
        return []
    work, types = table(JobWork), table(ResourceType)
    where, params = any_of(f"{work}.{column(JobWork, 'job')}", job_ids)
    columns = ", ".join(f"{work}.{column(JobWork, name)}" for name in _WORK_FIELDS)
    type_id = column(ResourceType, "id")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {work}.{column(JobWork, 'job')}, {types}.{column(ResourceType, 'name')}, {columns} "
                       f"FROM {work} INNER JOIN {types} ON {work}.{column(JobWork, 'resource_type')} = {types}.{type_id} "
                       f"WHERE {where} ORDER BY {types}.{column(ResourceType, 'stage')}, {types}.{type_id}", params)
        found = cursor.fetchall()
    return [dict(zip(("job_id", "resource_type__name", *_WORK_FIELDS), row, strict=True)) for row in found]


def _format(rows: list[dict[str, Any]], market: Market, work_rows: list[dict[str, Any]],
            money: dict[int, tuple[Decimal, Decimal]], shares: dict[int, dict[str, float]]) -> list[dict[str, Any]]:
    works: dict[int, list[dict[str, Any]]] = defaultdict(list)
    wf = representations(_work_fields())
    for row in work_rows:
        item: dict[str, Any] = {"resource_type": row["resource_type__name"]}
        for name, write in wf:
            value = row[name]
            item[name] = None if value is None else write(value)
        works[row["job_id"]].append(item)
    paths = selectors.queue_paths(market=market)
    slo = _slo(rows, market)
    zero = (Decimal("0"), Decimal("0"))
    out = []
    fields = representations(_fields())
    for r in rows:
        d: dict[str, Any] = {}
        for name, write in fields:
            value = r[name]
            d[name] = None if value is None else write(value)
        pk = r["id"]
        d["queue"] = paths[r["queue_id"]] if r["queue_id"] in paths else Queue.objects.get(pk=r["queue_id"]).path
        d["held"] = money_text(money.get(pk, zero)[0])
        d["work"] = works.get(pk, [])
        d["shares"] = shares.get(pk, {})
        d["slo"] = slo.get(pk)
        out.append({name: d[name] for name in JobSerializer.Meta.fields})
    return out


def _slo(rows: list[dict[str, Any]], market: Market) -> dict[int, dict[str, object]]:
    """``JobSerializer.get_slo`` for the SLO jobs among ``rows`` (None for the others)."""
    slo_rows = [r for r in rows if r["min_utility"] is not None]
    if not slo_rows:
        return {}
    jobs = [Job(id=r["id"], status=r["status"], utility=r["utility"], min_utility=r["min_utility"],
                achieved_utility=r["achieved_utility"]) for r in slo_rows]
    out = {}
    for pk, slo in slo_status(market=market, jobs=jobs).items():
        out[pk] = {"in_pool": slo.in_pool, "predicted_utility": slo.predicted, "achieved_utility": slo.achieved,
                   "met": slo.met}
    return out
