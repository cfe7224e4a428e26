"""REST API for Abacus's tenant extras (paper 000, Secs. 5-6): utility fits and the price preview."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace import selectors_abacus
from marketplace.api.answers import PreviewOut
from marketplace.api.fields import money_text
from marketplace.api.parsers import SafeJSONParser
from marketplace.api.serializers import BidSerializer
from marketplace.api.views import _service_errors, _tenant
from marketplace.services.bids import WorkItem, adopted_work
from marketplace.services.utility import utility_fit_adopt


class AdoptSerializer(serializers.Serializer):
    job_class = serializers.CharField(max_length=120)


def _fit_json(c: selectors_abacus.ClassFit) -> dict[str, Any]:
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

    @extend_schema(responses=None)
    def get(self, request: Request) -> Response:
        return Response([_fit_json(c) for c in selectors_abacus.utility_fits(tenant=_tenant(request))])


class UtilityAdoptView(APIView):
    """Adopt the current fit of a job class for new bids (``use_adopted_utility`` on a bid)."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(request=AdoptSerializer, responses=None)
    def post(self, request: Request) -> Response:
        tenant = _tenant(request)
        data = AdoptSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            adopted = utility_fit_adopt(tenant=tenant, job_class=data.validated_data["job_class"], user=request.user)
        except DjangoValidationError as exc:
            raise _service_errors(exc) from None
        return Response({"job_class": adopted.job_class, "utility": adopted.utility, "weights": adopted.weights,
                         "spread": adopted.spread, "jobs": adopted.jobs}, status=status.HTTP_201_CREATED)


def _preview_json(preview: selectors_abacus.Preview) -> dict[str, Any]:
    at = preview.at_entered
    return {
        "estimate": True, "note": preview.note, "budget": money_text(preview.entered),
        "shares": dict(zip(preview.types, at.shares.tolist(), strict=True)),
        "finish_s": at.finish_s, "in_pool": at.in_pool, "converged": at.converged,
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
        tenant = _tenant(request)
        bid = BidSerializer(data=request.data)
        bid.is_valid(raise_exception=True)
        d = bid.validated_data
        work = [WorkItem(w["resource_type"], w["tasks"], w["task_duration"], w["weight"]) for w in d["work"]]
        utility = d["utility"]
        try:
            if d.get("use_adopted_utility"):
                work, utility = adopted_work(tenant=tenant, job_class=(d.get("job_class") or d["name"]).strip(), work=work)
            preview = selectors_abacus.bid_preview(tenant=tenant, budget=float(d["budget"]), work=work, utility=utility,
                                                   min_utility=d.get("min_utility"))
        except DjangoValidationError as exc:
            raise _service_errors(exc) from None
        return Response(_preview_json(preview))
