"""Staff API: every tenant's jobs, and crediting or debiting an account through the ledger.

``GET /api/staff/jobs/`` (staff and cluster managers: read-only, every tenant) and
``POST /api/staff/ledger/adjust/`` (staff only; ``Idempotency-Key`` like the other money
POSTs; field errors per field; one audited ledger entry, ``services.ledger_adjust``).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace import roles, selectors, selectors_visibility
from marketplace.api import serializers as s
from marketplace.api.fields import MONEY_PLACES, MONEY_QUANTUM, StrictDecimalField, money_help
from marketplace.api.idempotency import IDEMPOTENCY_PARAMETER, idempotent
from marketplace.api.parsers import SafeJSONParser
from marketplace.api.views import _service_errors
from marketplace.models.accounts import Tenant
from marketplace.models.jobs import Job
from marketplace.services.ledger_adjust import MAX_ADJUSTMENT, REASON_MAX, REASON_MIN, account_adjust


class SeesAllTenants(BasePermission):
    message = "Only staff and cluster managers may read every tenant's jobs."

    def has_permission(self, request: Request, view: Any) -> bool:
        return roles.sees_all_tenants(request.user)


class IsStaff(BasePermission):
    message = "Only staff may credit or debit an account."

    def has_permission(self, request: Request, view: Any) -> bool:
        return roles.is_staff(request.user)


class StaffJobSerializer(s.JobSerializer):
    tenant = serializers.CharField(source="tenant.name", help_text="The job's tenant.")

    class Meta(s.JobSerializer.Meta):
        fields = ("id", "tenant", *s.JobSerializer.Meta.fields[1:])


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
        viewer = selectors_visibility.viewer_of(user=self.request.user)
        return selectors_visibility.staff_job_list(market=selectors.market_default(), viewer=viewer).select_related("tenant")

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        market = selectors.market_default()
        ids = [j.pk for j in page]
        ctx = self.get_serializer_context() | {
            "money": selectors.job_money(job_ids=ids), "shares": selectors.current_shares(market=market, job_ids=ids),
            "queue_paths": selectors.queue_paths(market=market),
        }
        return self.get_paginated_response(StaffJobSerializer(page, many=True, context=ctx).data)


class AdjustSerializer(serializers.Serializer):
    tenant = serializers.CharField(max_length=100, help_text="The tenant's name.")
    direction = serializers.ChoiceField(choices=["credit", "debit"],
                                        help_text="credit adds to the available balance, debit takes from it.")
    amount = StrictDecimalField(max_digits=18, decimal_places=MONEY_PLACES, min_value=MONEY_QUANTUM,
                                max_value=MAX_ADJUSTMENT, help_text=money_help("The amount, at most 4 decimal places."))
    reason = serializers.CharField(min_length=REASON_MIN, max_length=REASON_MAX, help_text="Why: kept in the tenant's ledger.")


class AdjustOutSerializer(serializers.Serializer):
    entry = s.LedgerEntrySerializer(help_text="The ledger entry booked.")
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
            raise _service_errors(exc) from None
        body = {"entry": s.LedgerEntrySerializer(entry).data, "tenant": tenant.name, "created_by": request.user.get_username()}
        return Response(body, status=status.HTTP_201_CREATED)
