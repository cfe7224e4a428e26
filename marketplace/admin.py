"""Django admin: markets (alpha, T_wait... through the audited service), queues, capacities.

Writes go through services so that every change is validated and audited; the
ledger is read-only here (corrections are new entries, made by services).
"""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from marketplace.fairshare.selectors import twait_hint
from marketplace.ledger.models import Account, LedgerEntry
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.config import T_WAIT_REQUIRED, market_configure, parse_t_wait, queue_save, resource_capacity_set
from marketplace.pools.models import CuraJob, PoolReconfiguration, VMInstanceType
from marketplace.reservations.models import Reservation, ReservationQuote, ReservationSettings


def _report(request, exc: ValidationError) -> None:  # type: ignore[no-untyped-def]
    """Show a service's field errors as one admin error message."""
    messages.error(request, "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()))


_TUNABLE = [
    "alpha", "t_wait", "auction_tolerance", "auction_max_rounds", "clock_speed", "mechanism", "fairshare_policy", "dispatch_mode",
    "fairshare_history", "fairshare_history_length",
]


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


class MarketAdminForm(forms.ModelForm):
    """T_wait as text: a number input blanks what the browser cannot parse (1e309) into
    "This field is required"; here the service explains, and "off" means no timeout."""

    t_wait = forms.CharField(
        label="T_wait", max_length=40, error_messages={"required": T_WAIT_REQUIRED},
        help_text="Seconds (0 = LTRF), or 'off' for no starvation timeout (the naive hierarchy)."
    )

    class Meta:
        model = Market
        fields = ("name", *_TUNABLE)

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.t_wait == float("inf"):
            self.initial["t_wait"] = "off"

    def clean_t_wait(self) -> float:
        try:
            return parse_t_wait(self.cleaned_data["t_wait"])
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["t_wait"]) from None


@admin.register(Market)
class MarketAdmin(admin.ModelAdmin):
    form = MarketAdminForm
    list_display = (
        "name", "mechanism", "alpha", "t_wait", "fairshare_policy", "dispatch_mode",
        "clock_speed", "sim_time", "state_version", "clearings",
    )
    fields = ("name", *_TUNABLE, "twait_hint", "sim_time", "state_version", "cleared_version", "clearings")
    readonly_fields = ("sim_time", "state_version", "cleared_version", "clearings", "twait_hint")

    @admin.display(description="T_wait guidance (paper 002, Eq. 7)")
    def twait_hint(self, obj: Market) -> str:
        if obj.pk is None:
            return "-"
        return twait_hint(market=obj)

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        if not change:
            return super().save_model(request, obj, form, change)
        changes = {f: form.cleaned_data[f] for f in _TUNABLE if f in form.changed_data}
        try:
            market_configure(market=obj, user=request.user, reason="admin", **changes)
        except ValidationError as exc:
            _report(request, exc)


_QUEUE_NUMBERS = ("weight", "min_share", "max_share")


class QueueAdminForm(forms.ModelForm):
    """Weight and share limits as text boxes (a number box blanks 1e309 into "This field is
    required"); the server says what is wrong, ``queue_save`` checks the rest."""

    class Meta:
        model = Queue
        fields = ("market", "name", "parent", "weight", "min_share", "max_share")
        widgets: ClassVar[dict[str, Any]] = {f: forms.TextInput(attrs={"inputmode": "decimal"}) for f in _QUEUE_NUMBERS}
        error_messages: ClassVar[dict[str, Any]] = {f: {"invalid": "Enter a finite number."} for f in _QUEUE_NUMBERS}


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):
    form = QueueAdminForm
    list_display = ("path", "weight", "min_share", "max_share", "parent", "market")

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        try:
            queue_save(queue=obj, user=request.user)
        except ValidationError as exc:
            _report(request, exc)


@admin.register(ResourceType)
class ResourceTypeAdmin(admin.ModelAdmin):
    list_display = ("name", "capacity", "stage", "market")

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        if not change:
            return super().save_model(request, obj, form, change)
        try:
            resource_capacity_set(resource_type=obj, capacity=form.cleaned_data["capacity"], user=request.user)
        except ValidationError as exc:
            _report(request, exc)


@admin.register(ConfigChange)
class ConfigChangeAdmin(ReadOnlyAdmin):
    list_display = ("changed_at", "market", "field", "old_value", "new_value", "changed_by", "reason")
    list_filter = ("field",)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = ("id", "created_at", "account", "kind", "amount", "available_after", "held_after", "job")
    list_filter = ("kind",)


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "default_queue", "market")


@admin.register(Account)
class AccountAdmin(ReadOnlyAdmin):
    list_display = ("tenant", "available", "held", "updated_at")


class JobWorkInline(admin.TabularInline):
    model = JobWork
    extra = 0
    can_delete = False
    readonly_fields = ("resource_type", "tasks", "task_duration", "weight", "pending", "running", "done")


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "tenant", "queue", "budget", "status", "sim_submit_time", "sim_finish_time")
    list_filter = ("status", "utility")
    inlines = (JobWorkInline,)


@admin.register(AllocationSnapshot)
class AllocationSnapshotAdmin(ReadOnlyAdmin):
    list_display = (
        "id", "mechanism", "state_version", "sim_time", "n_jobs", "rounds", "converged", "max_kkt_residual", "solve_ms", "total_ms",
    )
    exclude = ("plan",)


@admin.register(Reservation)
class ReservationAdmin(ReadOnlyAdmin):
    list_display = ("id", "tenant", "resource_type", "units", "start", "end", "price", "job", "source")


@admin.register(ReservationQuote)
class ReservationQuoteAdmin(ReadOnlyAdmin):
    list_display = ("id", "tenant", "resource_type", "units", "duration", "start", "price", "status", "expires_at")
    exclude = ("offers",)


@admin.register(ReservationSettings)
class ReservationSettingsAdmin(ReadOnlyAdmin):  # changes would bypass the audit trail (ConfigChange)
    list_display = ("market", "predictor", "slot_seconds", "horizon_slots", "reserve_price", "list_price", "max_discount")


# VM pools (paper 004): read-only here; staff edit them on the audited pools page (pools.views).
@admin.register(VMInstanceType)
class VMInstanceTypeAdmin(ReadOnlyAdmin):
    list_display = ("name", "vcpus", "memory_gb", "price", "market")


@admin.register(CuraJob)
class CuraJobAdmin(ReadOnlyAdmin):
    list_display = ("id", "tenant", "job_type", "status", "vm_type", "vms", "start_s", "end_s", "deadline_s", "cost")
    list_filter = ("status", "job_type")


@admin.register(PoolReconfiguration)
class PoolReconfigurationAdmin(ReadOnlyAdmin):
    list_display = ("time_s", "executed", "benefit", "cost", "jobs", "market")
