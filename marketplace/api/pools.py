"""REST API of the VM pools (paper 004): pools and their settings, and tenants' Cura jobs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace import selectors, selectors_pools
from marketplace.api.parsers import SafeJSONParser
from marketplace.api.views import _service_errors, _tenant
from marketplace.models import CuraJob
from marketplace.services.pools import SETTINGS_FIELDS, cura_job_submit, pool_settings_of, pool_settings_update


class PoolSettingsSerializer(serializers.Serializer[Any]):
    beta = serializers.FloatField(required=False, min_value=0)
    reconf_window_s = serializers.FloatField(required=False, min_value=0.001)
    boot_s = serializers.FloatField(required=False, min_value=0)
    shutdown_s = serializers.FloatField(required=False, min_value=0)
    framework_start_s = serializers.FloatField(required=False, min_value=0)
    core_budget = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)  # the column is a 32-bit integer
    reason = serializers.CharField(required=False, max_length=200, allow_blank=True)


class CuraJobInSerializer(serializers.Serializer[Any]):
    job_type = serializers.IntegerField(min_value=1, max_value=4, help_text="Profiled job type (paper 004, Tables II-V).")
    deadline_in_s = serializers.FloatField(min_value=0.001, help_text="Simulated seconds from now by which the job must end.")


class CuraJobSerializer(serializers.ModelSerializer[CuraJob]):
    vm_type = serializers.CharField(source="vm_type.name", default=None)
    cost = serializers.DecimalField(max_digits=24, decimal_places=6)

    class Meta:
        model = CuraJob
        fields = ("id", "job_type", "arrival_s", "deadline_s", "status", "vm_type", "vms", "start_s", "end_s", "cost")


def _pools_state() -> dict[str, Any]:
    market = selectors.market_default()
    ps = pool_settings_of(market=market)
    return {
        "sim_time": market.sim_time,
        "settings": {f: getattr(ps, f) for f in SETTINGS_FIELDS},
        "pools": [
            {"vm_type": r["type"].name, "vcpus": r["type"].vcpus, "memory_gb": r["type"].memory_gb, "price": str(r["type"].price),
             "size": r["pool"].size, "busy": r["busy"], "utilisation": r["utilisation"]}
            for r in selectors_pools.pool_rows(market=market)
        ],
    }


class PoolsView(APIView):
    """The market's VM pools now and the pool manager's settings; ``PATCH`` (staff) changes the settings, audited."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(_pools_state())

    @extend_schema(request=PoolSettingsSerializer, responses={200: OpenApiTypes.OBJECT})
    def patch(self, request: Request) -> Response:
        if not request.user.is_staff:
            raise PermissionDenied("Only staff may change the pool settings.")
        data = PoolSettingsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        reason = changes.pop("reason", "") or "API"
        try:
            pool_settings_update(market=selectors.market_default(), user=request.user, reason=reason, **changes)
        except DjangoValidationError as exc:
            raise _service_errors(exc) from None
        return Response(_pools_state())


class CuraJobsView(APIView):
    """``GET``: the tenant's Cura jobs with the configuration chosen; ``POST``: submit one (job type, deadline)."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(responses=CuraJobSerializer(many=True))
    def get(self, request: Request) -> Response:
        jobs = selectors_pools.cura_jobs_of(tenant=_tenant(request))[:500]
        return Response(CuraJobSerializer(jobs, many=True).data)

    @extend_schema(request=CuraJobInSerializer, responses=CuraJobSerializer)
    def post(self, request: Request) -> Response:
        tenant = _tenant(request)
        data = CuraJobInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job = cura_job_submit(tenant=tenant, user=request.user, **data.validated_data)
        except DjangoValidationError as exc:
            raise _service_errors(exc) from None
        return Response(CuraJobSerializer(job).data, status=status.HTTP_201_CREATED)
