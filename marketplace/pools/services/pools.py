"""VM pools: staff edit VM types, pool sizes and the pool manager's settings; tenants submit Cura jobs.

Writes only here (conventions: services write). Every parameter change is a
``ConfigChange`` row.
Cura jobs themselves (submission, the clock, money) are ``pools.services.jobs``.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.prices import price_level
from marketplace.pools.models import PoolSettings, VMInstanceType, VMPool

MAX_POOL = 100_000
MAX_CORE_BUDGET = 2_147_483_647  # the column's (PositiveIntegerField) largest value
SETTINGS_FIELDS = ("beta", "reconf_window_s", "boot_s", "shutdown_s", "framework_start_s", "core_budget")


def _user(user: object) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def _audit(market: Market, field: str, old: Any, new: Any, user: object, reason: str = "") -> ConfigChange:
    return ConfigChange.objects.create(
        market=market, field=field, old_value=str(old), new_value=str(new), changed_by=_user(user), reason=reason,
    )


def _price(value: Any) -> Decimal:
    try:
        price = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise ValidationError({"price": "Enter the unit price as a number (money per VM-second)."}) from None
    if not price.is_finite() or price <= 0 or price >= Decimal("1e8"):
        raise ValidationError({"price": "The unit price must be greater than 0 (money per VM-second)."})
    return price.quantize(Decimal("1e-12"))


@transaction.atomic
def vm_type_save(
    *, market: Market, name: str, vcpus: int, memory_gb: float, price: Any, vm_type: VMInstanceType | None = None,
    user: object = None, reason: str = "",
) -> VMInstanceType:
    """Create a VM type (with an empty pool) or change one, audited.

    Raises:
        ValidationError: field-level ({"name"|"vcpus"|"memory_gb"|"price": ...}).
    """
    errors: dict[str, str] = {}
    name = str(name).strip()
    if not name or len(name) > 40:
        errors["name"] = "Give the VM type a name of 1 to 40 characters."
    elif VMInstanceType.objects.filter(market=market, name=name).exclude(pk=getattr(vm_type, "pk", None)).exists():
        errors["name"] = f"This market already has a VM type named {name}."
    if isinstance(vcpus, bool) or not isinstance(vcpus, int) or not 1 <= vcpus <= 1024:
        errors["vcpus"] = "vCPUs must be a whole number from 1 to 1024."
    if not isinstance(memory_gb, (int, float)) or not math.isfinite(memory_gb) or not 0 < memory_gb <= 1e5:
        errors["memory_gb"] = "Memory must be more than 0 GB."
    try:
        unit = _price(price)
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)
    Market.objects.select_for_update().defer("engine_state").get(pk=market.pk)
    new = {"name": name, "vcpus": vcpus, "memory_gb": float(memory_gb), "price": unit}
    if vm_type is None:
        position = VMInstanceType.objects.filter(market=market).count()
        vm_type = VMInstanceType.objects.create(market=market, position=position, **new)
        VMPool.objects.create(vm_type=vm_type, size=0)
        _audit(market, f"vm_type[{name}]", "", f"{vcpus} vCPU, {memory_gb:g} GB, {unit}/VM-s", user, reason)
        return vm_type
    for field, value in new.items():
        old = getattr(vm_type, field)
        if old != value:
            _audit(market, f"vm_type[{vm_type.name}].{field}", old, value, user, reason)
            setattr(vm_type, field, value)
    vm_type.save()
    return vm_type


@transaction.atomic
def pool_resize(*, pool: VMPool, size: int, user: object = None, reason: str = "") -> VMPool:
    """Set a pool's size by hand, audited.

    Raises:
        ValidationError: {"size": ...} unless 0 <= size <= 100000.
    """
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_POOL:
        raise ValidationError({"size": f"The pool size must be a whole number of VMs from 0 to {MAX_POOL}."})
    pool = VMPool.objects.select_related("vm_type__market").select_for_update().get(pk=pool.pk)
    if pool.size != size:
        _audit(pool.vm_type.market, f"pool[{pool.vm_type.name}]", pool.size, size, user, reason)
        pool.size = size
        pool.save(update_fields=["size"])
    return pool


def pool_settings_of(*, market: Market) -> PoolSettings:
    """The market's pool settings (created with the defaults on first use)."""
    return PoolSettings.objects.get_or_create(market=market)[0]


@transaction.atomic
def pool_settings_update(*, market: Market, user: object = None, reason: str = "", **changes: Any) -> list[ConfigChange]:
    """Change beta, the reconfiguration window, boot / shutdown / framework start times or
    the core budget; each changed field audited.

    Raises:
        ValidationError: field-level, nothing written.
    """
    unknown = set(changes) - set(SETTINGS_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(unknown, "Not a pool setting."))
    errors = {}
    for field, value in changes.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            errors[field] = "Enter a number."
        elif field == "reconf_window_s" and value <= 0:
            errors[field] = "The reconfiguration window must be longer than 0 s."
        elif value < 0:
            errors[field] = "Must be 0 or more."
        elif field == "core_budget" and int(value) != value:
            errors[field] = "The core budget is a whole number of vCPUs."
        elif field == "core_budget" and value > MAX_CORE_BUDGET:
            errors[field] = f"At most {MAX_CORE_BUDGET} vCPUs."
    if errors:
        raise ValidationError(errors)
    Market.objects.select_for_update().defer("engine_state").get(pk=market.pk)
    ps = PoolSettings.objects.select_for_update().get(pk=pool_settings_of(market=market).pk)
    audit = []
    for field, value in changes.items():
        old = getattr(ps, field)
        if old != value:
            audit.append(_audit(market, f"pools.{field}", old, value, user, reason))
            setattr(ps, field, int(value) if field == "core_budget" else float(value))
    ps.save()
    return audit


def level_factor(*, market: Market, types: list[VMInstanceType]) -> float:
    """What the VM types' prices are multiplied by so that their mean price per vCPU-second (the sum of
    the prices per VM-second over the sum of the vCPUs) is the market's price level per slot-second
    (``market.prices.price_level``; a slot per vCPU, as ``simulator.cura.pools`` gives them). 1.0
    without VM types. Dimensionless."""
    per_vcpu = float(sum(t.price for t in types)) / sum(t.vcpus for t in types) if types else 0.0
    return price_level(market=market) / per_vcpu if per_vcpu > 0 else 1.0


@transaction.atomic
def pools_price_at_level(*, market: Market, user: object = None, reason: str = "") -> list[VMInstanceType]:
    """Re-price every VM type at the market's price level, audited: each price per VM-second times
    :func:`level_factor`, so a vCPU-second of the pools sells at the level a slot-second of the
    cluster does (docs/economy.md, section 2) and the types keep their price ratios. Paper 004's
    Alg. 1 and pool manager compare costs of one job or one window with each other, so one factor
    on every price changes none of their choices (footnote 2: the paper leaves pricing out). Jobs
    already placed keep the cost they were planned at. Returns the VM types, re-priced."""
    Market.objects.select_for_update().defer("engine_state").get(pk=market.pk)
    types = list(VMInstanceType.objects.select_for_update().filter(market=market).select_related("pool"))
    factor = level_factor(market=market, types=types)
    note = reason or f"priced at the market's level, {price_level(market=market):.6g} per slot-second"
    for t in types:
        vm_type_save(market=market, vm_type=t, name=t.name, vcpus=t.vcpus, memory_gb=t.memory_gb,
                     price=Decimal(f"{float(t.price) * factor:.10g}"), user=user, reason=note)
    return types


@transaction.atomic
def pools_setup_paper(*, market: Market, size: int = 40, user: object = None, at_level: bool = True) -> list[VMInstanceType]:
    """The VM types of paper 004, App. A (VM-1/2/3: 2/4/8 vCPUs and GB, 1/6, 1/3, 2/3 per
    VM-second) with ``size`` VMs each, for a market without VM types; ``at_level``: priced at the
    market's level (:func:`pools_price_at_level`, the paper's ratios kept: every type's vCPU-second
    costs the level), else at the paper's prices (1/12 per vCPU-second, its experiments)."""
    from scheduler.cura.profiles import PAPER_VM_TYPES

    if VMInstanceType.objects.filter(market=market).exists():
        raise ValidationError("This market already has VM types.")
    out: list[int] = []
    for t in PAPER_VM_TYPES:
        price = Decimal(str(round(t.price, 12)))
        vt = vm_type_save(market=market, name=t.name, vcpus=t.vcpus, memory_gb=t.memory_gb, price=price, user=user)
        pool_resize(pool=vt.pool, size=size, user=user)
        out.append(vt.pk)
    pool_settings_of(market=market)
    if at_level:
        pools_price_at_level(market=market, user=user)
    return list(VMInstanceType.objects.filter(pk__in=out).select_related("pool"))
