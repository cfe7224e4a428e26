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
from marketplace.api.views import NumberTolerantJSONParser, _service_errors, _tenant
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

    parser_classes = (NumberTolerantJSONParser,)

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
