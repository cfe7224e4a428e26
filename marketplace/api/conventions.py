"""The API's list conventions, one place: pagination, ordering, series filters.

* ``page`` and ``page_size`` (1 to ``MAX_PAGE_SIZE``, default ``PAGE_SIZE``) on every list;
* ``ordering`` -- one of the fields a view names (``-`` for descending); an unknown field is
  a 400 naming ``ordering`` (DRF's own filter ignores it silently);
* the series (fairness, market samples, prices): ``resource`` (a resource type name),
  ``sim_time_min`` / ``sim_time_max`` (simulated seconds since the market opened, not wall
  time), ``latest=true`` (only the newest sample time) and ``ordering=-sim_time`` (newest
  first). An unknown value is a 400 naming the parameter, never an empty 200.
* answers: a creation is ``201`` with ``Location`` (:func:`created`); a service's field errors
  a ``400``, or a ``409`` when the object's state refuses the request (:func:`service_errors`).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Page
from django.db.models import Max, QuerySet
from django_filters import rest_framework as filters
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from marketplace.api.conditional import marked_market
from marketplace.market import selectors
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.validation import StateConflict

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


class Pagination(PageNumberPagination):
    """``page`` and ``page_size`` (1 to 500, default 50); a bad page is a 404 (DRF), a bad size a 400."""

    page_size = PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise ValidationError({"page_size": f"Enter a whole number from 1 to {MAX_PAGE_SIZE}."})
        return size

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and not raw.strip():
            raise NotFound("Invalid page: an empty page number.")  # DRF would read it as page 1
        return super().get_page_number(request, paginator)

    def counted_page(self, request: Request, fetch: Callable[[int, int], tuple[list[Any], int]]) -> list[Any] | None:
        """``paginate_queryset`` for a list that reads a page and the list's length in one statement:
        ``fetch(limit, offset)`` gives the page's rows and the count (0 with no row). None, with nothing
        read, unless ``page`` is absent or a plain page number (DRF's other answers, ``page=last`` and
        the 404s, stay with ``paginate_queryset``), and None for a page past the end (its 404 there too).

        Raises:
            ValidationError: a bad ``page_size``, as ``paginate_queryset``.
        """
        page_size = self.get_page_size(request)
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            number = 1
        elif raw.isascii() and raw.isdigit() and raw[0] != "0" and len(raw) <= 9:
            number = int(raw)
        else:
            return None
        rows, count = fetch(page_size, (number - 1) * page_size)
        if not rows and number > 1:
            return None
        paginator = self.django_paginator_class((), page_size)
        paginator.count = count  # the cached property, read with the rows
        self.request = request
        self.page = Page(rows, number, paginator)
        if paginator.num_pages > 1 and self.template is not None:
            self.display_page_controls = True
        return list(self.page)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        params = super().get_schema_operation_parameters(view)
        for p in params:
            if p["name"] == "page_size":
                p["schema"] = {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": PAGE_SIZE}
                p["description"] = f"Results per page, 1 to {MAX_PAGE_SIZE} (default {PAGE_SIZE})."
            if p["name"] == "page":
                p["schema"] = {"type": "integer", "minimum": 1}
        return params


class StrictOrderingFilter(OrderingFilter):
    """``ordering=<field>`` or ``-<field>`` over the view's ``ordering_fields``; unknown: 400."""

    def get_ordering(self, request: Request, queryset: QuerySet, view: Any) -> list[str] | None:
        raw = request.query_params.get(self.ordering_param)
        if raw is None:
            return self.get_default_ordering(view)
        allowed = list(getattr(view, "ordering_fields", None) or [])
        if not allowed:
            raise ValidationError({"ordering": "This list has a fixed order."})
        fields = [f.strip() for f in raw.split(",") if f.strip()]
        bad = [f for f in fields if f.lstrip("-") not in allowed]
        if bad or not fields:
            raise ValidationError({"ordering": f"Unknown ordering {', '.join(bad) or repr(raw)}; use one of: "
                                               + ", ".join(f"{f}, -{f}" for f in allowed) + "."})
        return [*fields, *(["id"] if "id" not in {f.lstrip("-") for f in fields} else [])]  # a stable order for paging

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        allowed = list(getattr(view, "ordering_fields", None) or [])
        if not allowed:
            return []
        default = getattr(view, "ordering_default", "id")
        return [{
            "name": self.ordering_param, "required": False, "in": "query",
            "description": f"Sort by one field, '-' for descending (default {default}); an unknown field is a 400.",
            "schema": {"type": "string", "enum": [*allowed, *(f"-{f}" for f in allowed)]},
        }]


SIM_TIME_LIMIT = Decimal("1e12")  # simulated seconds: ~30,000 years; bounds keep the SQL comparison in range
TRUE_FALSE = (("true", "true"), ("false", "false"))


class SeriesFilter(filters.FilterSet):
    """Filters of the time series: resource type, a window of simulated time, the latest sample."""

    resource = filters.CharFilter(method="filter_resource", help_text="Resource type name (e.g. map); all types when omitted.")
    sim_time_min = filters.NumberFilter(field_name="sim_time", lookup_expr="gte", min_value=-SIM_TIME_LIMIT, max_value=SIM_TIME_LIMIT,
                                        help_text="Simulated seconds since the market opened (not wall time): samples at or after.")
    sim_time_max = filters.NumberFilter(field_name="sim_time", lookup_expr="lte", min_value=-SIM_TIME_LIMIT, max_value=SIM_TIME_LIMIT,
                                        help_text="Simulated seconds since the market opened (not wall time): samples at or before.")
    latest = filters.ChoiceFilter(choices=TRUE_FALSE, method="filter_latest",
                                  help_text="true: only the samples at the newest simulated time (after the other filters).")

    def filter_resource(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return of_resource(queryset, value, self.resource_names())

    def resource_names(self) -> list[str]:
        market = default_market(self.request) if self.request is not None else selectors.market_default()
        return series_resource_names(market)

    def filter_latest(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if value != "true":
            return queryset
        newest = queryset.aggregate(t=Max("sim_time"))["t"]
        return queryset.none() if newest is None else queryset.filter(sim_time=newest)

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        # ``latest`` last: "the newest" means the newest of what the other filters keep.
        latest = self.form.cleaned_data.pop("latest", None)
        queryset = super().filter_queryset(queryset)
        return self.filter_latest(queryset, "latest", latest) if latest else queryset


def series_resource_names(market: Market) -> list[str]:
    """The names the time series' ``resource`` filter accepts: the market's resource types."""
    return [t.name for t in selectors.resource_types_of(market=market)]


def of_resource(queryset: QuerySet, value: str, names: list[str]) -> QuerySet:
    """``queryset``'s rows of resource type ``value``; a name not in ``names`` is a 400."""
    if value not in names:
        raise ValidationError({"resource": f"Unknown resource type '{value}'; known: {', '.join(names)}."})
    return queryset.filter(resource_type__name=value)


def request_tenant(request: Request) -> Tenant:
    tenant = getattr(request.user, "tenant", None)
    if tenant is None:
        raise PermissionDenied("This account is not a tenant: it cannot hold jobs.")
    return tenant


def tenant_market(tenant: Tenant, request: Request | None = None) -> Market:
    """The tenant's market without its stored engine: from the marks ``@conditional`` read for
    ``request`` if it did, else one query; remembered on the tenant for the rest of the request."""
    cached = tenant._state.fields_cache.get("market")
    if cached is None:
        cached = (marked_market(request, tenant.market_id) if request is not None else None) or (
            Market.objects.defer("engine_state").get(pk=tenant.market_id))
        tenant._state.fields_cache["market"] = cached
    return cached


def default_market(request: Request) -> Market:
    """``market.selectors.market_default()``, from the marks ``@conditional`` read for ``request`` if it did."""
    return marked_market(request) or selectors.market_default()


class Conflict(APIException):
    """409: the request conflicts with the current state of what it names (RFC 9110, Sec. 15.5.10)."""

    status_code = 409
    default_detail = "The request conflicts with the current state of the resource."
    default_code = "conflict"


def service_errors(exc: DjangoValidationError) -> APIException:
    """A service's ValidationError as the API answers it: 409 for a :class:`StateConflict`, else 400;
    the body is the field errors either way."""
    body = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
    return Conflict(body) if isinstance(exc, StateConflict) else ValidationError(body)


def created(request: Request, body: Any, location: str) -> Response:
    """``201 Created`` with ``Location``: the absolute URL of what was created (RFC 9110, Sec. 15.3.2)."""
    return Response(body, status=201, headers={"Location": request.build_absolute_uri(location)})
