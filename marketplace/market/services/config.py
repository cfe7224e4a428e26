"""Market configuration with an audit trail (who changed what, old and new value)."""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from marketplace.market import hooks
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.services.market import market_changed, structure_changed
from scheduler.fairshare.limits import HISTORY_MODES
from scheduler.registry import DISPATCH, FAIRSHARE, MECHANISMS, Registry

T_WAIT_OFF = ("off", "never", "inf", "infinity")  # spellings of "no starvation timeout" (the naive hierarchy)
T_WAIT_REQUIRED = "Enter T_wait in seconds (0 = LTRF), or 'off' for no starvation timeout."


def parse_t_wait(value: object) -> float:
    """T_wait in simulated seconds from user input: a finite number >= 0, or "off"
    (no starvation timeout: the naive hierarchy, paper 002 Theorem 1) as ``math.inf``.

    Raises:
        ValidationError: {"t_wait": ...} with what was wrong (empty, not a number,
            negative, too large to be finite).
    """
    text = str(value).strip().lower() if value is not None else ""
    if text in T_WAIT_OFF:
        return math.inf
    if not text:
        raise ValidationError({"t_wait": T_WAIT_REQUIRED})
    try:
        number = float(text)
    except ValueError:
        raise ValidationError({"t_wait": f"'{value}' is not a number of seconds; enter e.g. 30, or 'off'."}) from None
    if math.isnan(number) or math.isinf(number):
        raise ValidationError(
            {"t_wait": f"'{value}' is not a finite number of seconds (too large for a float); to disable the timeout enter 'off'."}
        )
    if number < 0:
        raise ValidationError({"t_wait": "T_wait cannot be negative: 0 = LTRF, larger values favour the hierarchy."})
    return number


def _named(registry: Registry[Any]) -> Any:
    """A validator accepting exactly the names of a stage registry."""
    return lambda v: v in registry or f"Unknown {registry.stage} '{v}'; choose one of: {', '.join(registry.names())}."

# field -> (validator, a market parameter?). A parameter's change is a market change: the next clearing,
# whichever path runs it (task, tick, sweeper), uses it and records it with its Plan, and the next tick
# hands it to the engine (docs/economy.md, "Settings"). The clock's speed is not a parameter of the market's
# allocation: it changes only how fast the clock runs.
_RULES: dict[str, tuple[Any, bool]] = {
    "alpha": (lambda v: 0.0 <= v <= 1.0 or "alpha must lie in [0, 1] (0 = equal shares, 1 = proportional to money).", True),
    "t_wait": (lambda v: v >= 0 or "T_wait must be zero or more seconds (0 = LTRF, large = naive hierarchy).", True),
    "auction_tolerance": (lambda v: 0 < v < 1 or "The tolerance must lie in (0, 1).", True),
    "auction_max_rounds": (lambda v: 1 <= v <= 100000 or "Between 1 and 100000 rounds.", True),
    "clock_speed": (lambda v: 0 < v <= 1e6 or "The clock speed must be positive (simulated seconds per wall second).", False),
    "mechanism": (_named(MECHANISMS), True),
    "fairshare_policy": (_named(FAIRSHARE), True),
    "dispatch_mode": (_named(DISPATCH), True),
    "fairshare_history": (
        lambda v: v in HISTORY_MODES or f"Unknown history mode '{v}'; choose one of: {', '.join(HISTORY_MODES)}.", True
    ),
    "fairshare_history_length": (lambda v: v > 0 or "The round length / half-life must be a positive number of seconds.", True),
}


def _coerce(field: str, value: Any) -> Any:
    if field == "t_wait":
        return parse_t_wait(value)
    kind = type(Market._meta.get_field(field).default)
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise ValidationError({field: "Enter a valid value."}) from None
    if isinstance(out, float) and not math.isfinite(out):
        raise ValidationError({field: f"'{value}' is not a finite number."})
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
            ConfigChange(
                market=market, field=field, old_value=_shown(old), new_value=_shown(value), changed_by=_user(user), reason=reason
            )
        )
        reclear = reclear or _RULES[field][1]
    if not audit:
        return []
    market.save(update_fields=[c.field for c in audit])
    if reclear:
        market_changed(market=market)
    return ConfigChange.objects.bulk_create(audit)


def _shown(value: object) -> str:
    """A value as the audit trail shows it ("off" for an infinite T_wait)."""
    return "off" if value == math.inf else str(value)


def _user(user: object) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


MAX_RESERVE_PRICE = 1e6  # money per slot-second


@transaction.atomic
def reserve_prices_set(*, market: Market, prices: dict[str, Any], user: object = None, reason: str = "") -> list[ConfigChange]:
    """Set resource types' reserve prices (money per slot-second; docs/economy.md, "A price nobody moves
    alone"), audited: one ``ConfigChange`` ``reserve_price[<type>]`` per price that changed. Below its
    reserve price the market sells no slot-second of a type: a bid's budget must cover the reserve
    times its work, and no quote prices below it. Applied from the next bid and quote.

    Raises:
        ValidationError: {"reserve_prices": [...]} for an unknown type or a price that is not a finite
            number in [0, 1e6] (nothing written).
    """
    types = {t.name: t for t in ResourceType.objects.select_for_update().filter(market=market)}
    errors, values = [], {}
    for name, value in prices.items():
        if name not in types:
            errors.append(f"Unknown resource type '{name}' (known: {', '.join(sorted(types))}).")
            continue
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None or not math.isfinite(number) or not 0 <= number <= MAX_RESERVE_PRICE:
            errors.append(f"{name}: the reserve price must be a number of credits per slot-second from 0 to {MAX_RESERVE_PRICE:g}.")
            continue
        values[name] = float(number)
    if errors:
        raise ValidationError({"reserve_prices": errors})
    locked = Market.objects.select_for_update().defer("engine_state").get(pk=market.pk)
    changes = []
    for name, value in values.items():
        rt = types[name]
        if rt.reserve_price != value:
            changes.append(ConfigChange(market=locked, field=f"reserve_price[{name}]", old_value=_shown(rt.reserve_price),
                                        new_value=_shown(value), changed_by=_user(user), reason=reason[:200]))
            rt.reserve_price = value
            rt.save(update_fields=["reserve_price"])
    if changes:
        ConfigChange.objects.bulk_create(changes)
        structure_changed(market=locked)  # every process re-reads the types (the engine is kept: same ids)
    return changes


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
    if not (isinstance(queue.weight, (int, float)) and math.isfinite(queue.weight) and queue.weight > 0):
        errors["weight"] = "The weight must be a positive finite number."
    lo, hi = queue.min_share, queue.max_share
    for name, x in (("min_share", lo), ("max_share", hi)):
        if not (isinstance(x, (int, float)) and math.isfinite(x) and 0 <= x <= 1):
            errors[name] = "A share is a fraction of the cluster from 0 to 1."
    if not errors.keys() & {"min_share", "max_share"} and lo > hi:
        errors["min_share"] = f"The minimum share ({lo}) exceeds the maximum share ({hi})."
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
    before = "" if old is None else f"parent={old.parent_id} weight={old.weight} min={old.min_share} max={old.max_share}"
    ConfigChange.objects.create(
        market=market, field=f"queue[{queue.path}]", old_value=before,
        new_value=f"parent={queue.parent_id} weight={queue.weight} min={queue.min_share} max={queue.max_share}", changed_by=_user(user),
    )
    structure_changed(market=market)  # the fair fractions changed: shares and samples follow
    return queue


@transaction.atomic
def market_part_arguments_set(*, market: Market, part: str, values: dict[str, Any], user: object = None,
                              reason: str = "") -> list[ConfigChange]:
    """Change part ``part``'s own settings for ``market`` (``market.hooks.MarketPart.arguments``);
    each changed argument gets a ``ConfigChange`` row named ``<part>.<argument>``. A change is a
    market change (the next clearing and tick see it), as for the core's parameters.

    Raises:
        ValidationError: field-level errors keyed by argument (or ``part`` for an unknown part or one
            without arguments); nothing is changed.
    """
    try:
        clean = hooks.validate_part_arguments(part, values)
    except hooks.PartArgumentError as exc:
        raise ValidationError(exc.errors) from None
    except (KeyError, TypeError):
        raise ValidationError({"part": f"No part {part!r} with settings."}) from None
    market = Market.objects.select_for_update().defer("engine_state").get(pk=market.pk)
    stored = dict((market.part_arguments or {}).get(part, {}))
    current = hooks.part_arguments(market, part)
    audit = []
    for key, value in clean.items():
        old = getattr(current, key)
        if (list(old) if isinstance(old, tuple) else old) == value:
            continue
        stored[key] = value
        audit.append(ConfigChange(market=market, field=f"{part}.{key}", old_value=str(old), new_value=str(value),
                                  changed_by=_user(user), reason=reason))
    if not audit:
        return []
    market.part_arguments = {**(market.part_arguments or {}), part: stored}
    market.save(update_fields=["part_arguments"])
    market_changed(market=market)
    return ConfigChange.objects.bulk_create(audit)
