"""A market's structure (queue paths, resource types), read once per ``structure_version``.

The queue tree and the resource types change only through the services that raise the
market's ``structure_version`` (a new random number each time: ``services.market``), so
this process keeps what it read under that number and reads again when it moves. A
market instance whose ``structure_version`` is deferred, or 0 (never set), is always
read afresh: nothing names its version.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db import DEFAULT_DB_ALIAS

from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue, ResourceType, dotted_paths

_LOCK = threading.Lock()
_CACHE: dict[tuple[str, int], tuple[int, Any]] = {}


def _version(market: Market) -> int:
    if "structure_version" in market.get_deferred_fields():
        return 0
    return int(market.structure_version or 0)


def per_structure(kind: str, market: Market, read: Any) -> Any:
    """``read()``, kept in this process under (``kind``, market) until the market's ``structure_version``
    moves (read afresh each time when it is deferred or 0). The value is shared: callers must not change it."""
    version = _version(market)
    if version:
        with _LOCK:
            hit = _CACHE.get((kind, market.pk))
        if hit is not None and hit[0] == version:
            return hit[1]
    value = read()
    if version:
        with _LOCK:
            _CACHE[(kind, market.pk)] = (version, value)
    return value


def queue_paths(market: Market) -> dict[int, str]:
    """queue id -> dotted path (``models.queues.dotted_paths``); a copy the caller may change."""
    paths: dict[int, str] = per_structure(
        "paths", market, lambda: dotted_paths(Queue.objects.filter(market_id=market.pk).values_list("id", "name", "parent_id")))
    return dict(paths)


def resource_types(market: Market) -> list[ResourceType]:
    """The market's resource types in stage order, as fresh instances (the caller may change them)."""
    names = [f.attname for f in ResourceType._meta.concrete_fields]
    rows: tuple[tuple[Any, ...], ...] = per_structure(
        "types", market, lambda: tuple(ResourceType.objects.filter(market_id=market.pk).order_by("stage", "id").values_list(*names)))
    return [ResourceType.from_db(DEFAULT_DB_ALIAS, names, list(row)) for row in rows]


def forget() -> None:
    """Drop what this process kept (tests: ids and versions repeat across rolled-back tests)."""
    with _LOCK:
        _CACHE.clear()
