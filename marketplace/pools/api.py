"""REST API of the VM pools (paper 004): pools and their settings, and tenants' Cura jobs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace.api.conventions import created, request_tenant, service_errors
from marketplace.api.fields import MoneyField, StrictJSON, money_text
from marketplace.api.parsers import SafeJSONParser
from marketplace.market import selectors
from marketplace.market.prices import price_level
from marketplace.pools.models import CuraJob
from marketplace.pools.selectors import cura_jobs_of, pool_rows
from marketplace.pools.services.jobs import cura_job_cancel, cura_job_submit
from marketplace.pools.services.pools import MAX_CORE_BUDGET, SETTINGS_FIELDS, pool_settings_of, pool_settings_update


class PoolSettingsSerializer(StrictJSON, serializers.Serializer[Any]):
    beta = serializers.FloatField(required=False, min_value=0, help_text="Reconfigure when benefit > beta x cost; dimensionless.")
    reconf_window_s = serializers.FloatField(required=False, min_value=0.001, help_text="Reconfiguration window, simulated seconds.")
    boot_s = serializers.FloatField(required=False, min_value=0, help_text="VM boot time, simulated seconds.")
    shutdown_s = serializers.FloatField(required=False, min_value=0, help_text="VM shutdown time, simulated seconds.")
    framework_start_s = serializers.FloatField(required=False, min_value=0, help_text="Framework start time, simulated seconds.")
    core_budget = serializers.IntegerField(required=False, min_value=0, max_value=MAX_CORE_BUDGET,
                                           help_text="vCPUs the servers offer (0: the pools' current cores).")
    reason = serializers.CharField(required=False, max_length=200, allow_blank=True)


class CuraJobInSerializer(StrictJSON, serializers.Serializer[Any]):
    job_type = serializers.IntegerField(min_value=1, max_value=4, help_text="Profiled job type (paper 004, Tables II-V).")
    deadline_in_s = serializers.FloatField(min_value=0.001, help_text="Simulated seconds from now by which the job must end.")
    job_class = serializers.CharField(required=False, allow_blank=True, max_length=60,
                                      help_text="Your name for repeats of this job: completed runs refine its profile.")
    runtime_scale = serializers.FloatField(required=False, min_value=0.01, max_value=100,
                                           help_text="Simulation only: the job's real run / the built-in profile's run (default 1).")


class CuraJobSerializer(serializers.ModelSerializer[CuraJob]):
    vm_type = serializers.CharField(source="vm_type.name", default=None)
    cost = MoneyField(help_text="Resource cost: VMs x unit price x runtime (rounded to the money format).", allow_null=True)
    held = MoneyField(help_text="Money still held on the tenant's account for this job.")
    charged = MoneyField(help_text="Money charged for this job (on completion).")
    paid_rate = serializers.FloatField(read_only=True, allow_null=True, help_text=(
        "What the job pays per slot-second of its work (a slot per vCPU), money per slot-second, a rate: once charged, "
        "charged / (VMs x vCPUs x seconds run); before, cost / (VMs x vCPUs x planned seconds). Null without a configuration."))

    class Meta:
        model = CuraJob
        fields = ("id", "job_type", "job_class", "arrival_s", "deadline_s", "status", "vm_type", "vms", "start_s", "end_s",
                  "finished_s", "cost", "held", "charged", "paid_rate")


class PoolSettingsOutSerializer(serializers.Serializer[Any]):
    beta = serializers.FloatField(help_text="Reconfigure when benefit > beta x cost; dimensionless.")
    reconf_window_s = serializers.FloatField(help_text="Reconfiguration window, simulated seconds.")
    boot_s = serializers.FloatField(help_text="VM boot time, simulated seconds.")
    shutdown_s = serializers.FloatField(help_text="VM shutdown time, simulated seconds.")
    framework_start_s = serializers.FloatField(help_text="Framework start time, simulated seconds.")
    core_budget = serializers.IntegerField(help_text="vCPUs the servers offer (0: the pools' current cores).")


class PoolOutSerializer(serializers.Serializer[Any]):
    vm_type = serializers.CharField(help_text="VM type name.")
    vcpus = serializers.IntegerField(help_text="vCPUs of one VM, a count.")
    memory_gb = serializers.FloatField(help_text="Memory of one VM, GB.")
    price = MoneyField(help_text="Price of one VM-second (a rate, in the money format: rounded to its 4 places).")
    price_per_slot_second = serializers.FloatField(help_text=(
        "The same per slot-second (a slot per vCPU), money per slot-second, rounded to 8 decimal places."))
    size = serializers.IntegerField(help_text="VMs in the pool, a count.")
    busy = serializers.IntegerField(help_text="VMs running a job now, a count.")
    utilisation = serializers.FloatField(help_text="busy / size, 0 to 1.")
    level_ratio = serializers.FloatField(allow_null=True, help_text=(
        "price_per_slot_second over the market's price level (1: priced at the level; docs/economy.md)."))


class PoolsStateSerializer(serializers.Serializer[Any]):
    """The VM pools now and the pool manager's settings (paper 004)."""

    sim_time = serializers.FloatField()
    price_level = serializers.FloatField(help_text="The market's price level, money per slot-second.")
    settings = PoolSettingsOutSerializer(help_text="The pool manager's settings.")
    pools = PoolOutSerializer(many=True, help_text="One per VM type.")


RATE_PLACES = 8  # rates per slot-second in the pools' answer: float noise past this is not information


def _pools_state() -> dict[str, Any]:
    market = selectors.market_default()
    ps = pool_settings_of(market=market)
    level = price_level(market=market)  # money per slot-second: what price_per_slot_second is compared with
    return {
        "sim_time": market.sim_time,
        "price_level": level,
        "settings": {f: getattr(ps, f) for f in SETTINGS_FIELDS},
        "pools": [
            {"vm_type": r["type"].name, "vcpus": r["type"].vcpus, "memory_gb": r["type"].memory_gb, "price": money_text(r["type"].price),
             "price_per_slot_second": round(r["slot_rate"], RATE_PLACES), "level_ratio": r["level_ratio"],
             "size": r["pool"].size, "busy": r["busy"], "utilisation": r["utilisation"]}
            for r in pool_rows(market=market, level=level)
        ],
    }


class PoolsView(APIView):
    """The market's VM pools now and the pool manager's settings; ``PATCH`` (staff) changes the settings, audited."""

    parser_classes = (SafeJSONParser,)

    @extend_schema(responses={200: PoolsStateSerializer})
    def get(self, request: Request) -> Response:
        return Response(_pools_state())

    @extend_schema(request=PoolSettingsSerializer, responses={200: PoolsStateSerializer})
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
            raise service_errors(exc) from None
        return Response(_pools_state())


class CuraJobsView(generics.GenericAPIView):
    """``GET``: the tenant's Cura jobs with the configuration chosen (paginated); ``POST``: submit one (job type, deadline)."""

    parser_classes = (SafeJSONParser,)
    serializer_class = CuraJobSerializer
    queryset = CuraJob.objects.none()  # the schema's model; get() reads the caller's Cura jobs
    ordering_fields = ("id", "arrival_s", "deadline_s")
    ordering = ("-id",)
    ordering_default = "-id (newest first)"

    @extend_schema(responses=CuraJobSerializer(many=True))
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(cura_jobs_of(tenant=request_tenant(request))))
        return self.get_paginated_response(CuraJobSerializer(page, many=True).data)

    @extend_schema(request=CuraJobInSerializer, responses={201: CuraJobSerializer})
    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        data = CuraJobInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job = cura_job_submit(tenant=tenant, user=request.user, **data.validated_data)
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return created(request, CuraJobSerializer(job).data, reverse("api-cura-job", args=[job.pk]))


class CuraJobDetailView(APIView):
    """``GET``: one of your Cura jobs (another tenant's: 404)."""

    @extend_schema(responses=CuraJobSerializer)
    def get(self, request: Request, pk: int) -> Response:
        job = cura_jobs_of(tenant=request_tenant(request)).filter(pk=pk).first()
        if job is None:
            raise NotFound("No such Cura job of yours.")
        return Response(CuraJobSerializer(job).data)


class CuraJobCancelView(APIView):
    """``POST``: withdraw one of your waiting, reserved or running Cura jobs: a running one pays for the VM-seconds it ran
    (at most its configuration's cost), the rest of its hold is released (docs/economy.md)."""

    @extend_schema(request=None, responses=CuraJobSerializer)
    def post(self, request: Request, pk: int) -> Response:
        job = cura_jobs_of(tenant=request_tenant(request)).filter(pk=pk).first()
        if job is None:
            raise NotFound("No such Cura job of yours.")
        try:
            job = cura_job_cancel(job=job, user=request.user)
        except DjangoValidationError as exc:
            raise service_errors(exc) from None
        return Response(CuraJobSerializer(job).data)
