"""A value computed when first read: what a Plan's diagnostics keep of a read-out that only some
readers need (``scheduler.plan.Diagnostics.max_kkt_residual``: the live market stores it, the
offline replay never reads it)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Deferred", "DeferredFloat"]


class Deferred:
    """A float computed by ``compute()`` when it is first read (``scheduler.plan.Diagnostics``'
    ``max_kkt_residual``): a clearing whose residual nobody reads never computes it.

    ``compute`` must be a function of values that do not change afterwards (the
    clearing's result and snapshot: plain data nobody mutates); it is called at most
    once per Diagnostics, which keeps the value and drops the function.
    """

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[], float]) -> None:
        self.compute = compute

    def __repr__(self) -> str:
        return "Deferred(...)"


class DeferredFloat:
    """The data descriptor of a dataclass field (``scheduler.plan.Diagnostics``) that holds a float or a
    :class:`Deferred` one: given a Deferred, the first read computes it and stores the
    float in the instance's ``__dict__`` under ``_<name>``. Frozen-ness is the
    dataclass's (its ``__setattr__`` refuses before this ``__set__`` is reached)."""

    def __init__(self, default: float) -> None:
        self.default = default
        self.slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: object | None, owner: type | None = None) -> float:
        if obj is None:  # the class's attribute: the dataclass reads the field's default here
            return self.default
        value = obj.__dict__[self.slot]
        if isinstance(value, Deferred):
            value = obj.__dict__[self.slot] = value.compute()
        return value  # type: ignore[no-any-return]

    def __set__(self, obj: object, value: float | Deferred) -> None:
        obj.__dict__[self.slot] = value
