"""Market configuration with an audit trail (who changed what, old and new value)."""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from marketplace.models import ConfigChange, Market, Queue, ResourceType
from marketplace.services.market import market_changed, structure_changed
from scheduler.registry import DISPATCH, FAIRSHARE, MECHANISMS, Registry


def _named(registry: Registry[Any]) -> Any:
    """A validator accepting exactly the names of a stage registry."""
    return lambda v: v in registry or f"Unknown {registry.stage} '{v}'; choose one of: {', '.join(registry.names())}."

# field -> (validator, changes the clearing's input?)
_RULES: dict[str, tuple[Any, bool]] = {
    "alpha": (lambda v: 0.0 <= v <= 1.0 or "alpha must lie in [0, 1] (0 = equal shares, 1 = proportional to money).", True),
    "t_wait": (lambda v: v >= 0 or "T_wait must be zero or more seconds (0 = LTRF, large = naive hierarchy).", False),
    "auction_tolerance": (lambda v: 0 < v < 1 or "The tolerance must lie in (0, 1).", True),
    "auction_max_rounds": (lambda v: 1 <= v <= 100000 or "Between 1 and 100000 rounds.", True),
    "clock_speed": (lambda v: 0 < v <= 1e6 or "The clock speed must be positive (simulated seconds per wall second).", False),
    "mechanism": (_named(MECHANISMS), True),
    "fairshare_policy": (_named(FAIRSHARE), False),
    "dispatch_mode": (_named(DISPATCH), False),
}


def _coerce(field: str, value: Any) -> Any:
    kind = type(Market._meta.get_field(field).default)
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise ValidationError({field: "Enter a valid value."}) from None
    if isinstance(out, float) and not math.isfinite(out):
        raise ValidationError({field: "Enter a finite number."})
    return out


@transaction.atomic
def market_configure(*, market: Market, user: object = None, reason: str = "", **changes: Any) -> list[ConfigChange]:
    """Change market parameters; each changed field gets a ``ConfigChange`` row.

    Raises:
        ValidationError: a dict of field errors; nothing is changed.
    """
    unknown = set(changes) - _RULES.keys()
    if unknown:
        raise ValidationError(dict.fromkeys(unknown, "This parameter cannot be changed here."))
    values = {f: _coerce(f, v) for f, v in changes.items()}
    errors = {f: msg for f, v in values.items() if (msg := _RULES[f][0](v)) is not True}
    if errors:
        raise ValidationError(errors)
    market = Market.objects.select_for_update().defer("engine_state").get(pk=market.pk)
    audit, reclear = [], False
    for field, value in values.items():
        old = getattr(market, field)
        if old == value:
            continue
        setattr(market, field, value)
        audit.append(
            ConfigChange(market=market, field=field, old_value=str(old), new_value=str(value), changed_by=_user(user), reason=reason)
        )
        reclear = reclear or _RULES[field][1]
    if not audit:
        return []
    market.save(update_fields=[c.field for c in audit])
    if reclear:
        market_changed(market=market)
    return ConfigChange.objects.bulk_create(audit)


def _user(user: object) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


@transaction.atomic
def resource_capacity_set(*, resource_type: ResourceType, capacity: int, user: object = None) -> ResourceType:
    """Change a resource type's capacity (slots), audited; the cluster applies it at the next tick.

    Raises:
        ValidationError: {"capacity": ...} unless 1 <= capacity <= 1e6.
    """
    if isinstance(capacity, bool) or not isinstance(capacity, int) or not 1 <= capacity <= 1_000_000:
        raise ValidationError({"capacity": "The capacity must be a whole number of units from 1 to 1000000."})
    market = Market.objects.select_for_update().defer("engine_state").get(pk=resource_type.market_id)
    rt = ResourceType.objects.select_for_update().get(pk=resource_type.pk)
    if rt.capacity != capacity:
        ConfigChange.objects.create(
            market=market, field=f"capacity[{rt.name}]", old_value=str(rt.capacity), new_value=str(capacity), changed_by=_user(user)
        )
        rt.capacity = capacity
        rt.save(update_fields=["capacity"])
        structure_changed(market=market)
    return rt


@transaction.atomic
def queue_save(*, queue: Queue, user: object = None) -> Queue:
    """Create or change a queue (name, parent, weight), audited.

    Raises:
        ValidationError: non-positive weight, a parent in another market, a cycle,
            or a leaf with jobs becoming a parent.
    """
    errors: dict[str, str] = {}
    if not (math.isfinite(queue.weight) and queue.weight > 0):
        errors["weight"] = "The weight must be a positive number."
    node = queue.parent
    while node is not None and not errors:
        if node.market_id != queue.market_id:
            errors["parent"] = "The parent queue belongs to another market."
        elif queue.pk is not None and node.pk == queue.pk:
            errors["parent"] = "A queue cannot be its own ancestor."
        node = node.parent
    if queue.parent is not None and queue.parent.jobs.filter(status__in=("queued", "running")).exists():
        errors["parent"] = "This queue has active jobs; a leaf with jobs cannot get sub-queues."
    if errors:
        raise ValidationError(errors)
    market = Market.objects.select_for_update().defer("engine_state").get(pk=queue.market_id)
    old = Queue.objects.filter(pk=queue.pk).first() if queue.pk else None
    queue.save()
    before = "" if old is None else f"parent={old.parent_id} weight={old.weight}"
    ConfigChange.objects.create(
        market=market, field=f"queue[{queue.path}]", old_value=before,
        new_value=f"parent={queue.parent_id} weight={queue.weight}", changed_by=_user(user),
    )
    structure_changed(market=market)  # the fair fractions changed: shares and samples follow
    return queue
