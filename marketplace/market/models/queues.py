"""The queue hierarchy (organisations' contributed shares) and resource types."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from django.db import models
from django.db.models import Q

from marketplace.infra.locking import NoKeyLockManager
from marketplace.market.models.market import Market


def dotted_paths(rows: Iterable[tuple[int, str, int | None]]) -> dict[int, str]:
    """queue id -> dotted path ("root.orga.etl") from ``(id, name, parent_id)`` rows.

    The one definition of a queue's path: the H-LTRF tree's node names, the
    pages, the API and the audit trail all use it.
    """
    table = {pk: (name, parent) for pk, name, parent in rows}
    out: dict[int, str] = {}

    def path(pk: int) -> str:
        if pk not in out:
            name, parent = table[pk]
            out[pk] = name if parent is None or parent not in table else f"{path(parent)}.{name}"
        return out[pk]

    for pk in table:
        path(pk)
    return out


class Queue(models.Model):
    """A node of the queue tree; leaves hold jobs (paper 002, Sec. 5: H-LTRF).

    ``weight`` is relative among siblings: a leaf's fair fraction of the
    cluster is the product of weight / sum(sibling weights) along its path.
    """

    # no index of its own: the unique constraint below leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="queues", db_index=False)
    name = models.CharField(max_length=60)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    weight = models.FloatField(default=1.0)
    min_share = models.FloatField(
        default=0.0, help_text="Minimum fraction of the cluster this queue is served first up to (paper 002, Sec. 6.2.3)."
    )
    max_share = models.FloatField(default=1.0, help_text="Maximum fraction of the cluster this queue may hold (1 = no cap).")

    objects = NoKeyLockManager()  # row locks: FOR NO KEY UPDATE (infra.locking)

    class Meta:
        ordering: ClassVar[list[str]] = ["id"]
        constraints = (
            models.CheckConstraint(condition=Q(weight__gt=0), name="queue_weight_positive"),
            models.CheckConstraint(
                condition=Q(min_share__gte=0) & Q(min_share__lte=models.F("max_share")) & Q(max_share__lte=1), name="queue_share_limits",
                violation_error_message="Shares are fractions of the cluster: 0 <= minimum share <= maximum share <= 1.",
            ),
            models.UniqueConstraint(fields=["market", "parent", "name"], name="queue_unique_name_per_parent"),
        )

    def __str__(self) -> str:
        return self.path

    @property
    def path(self) -> str:
        """The dotted path (:func:`dotted_paths`); a queue not saved yet has its parent's path plus its name."""
        rows = list(Queue.objects.filter(market_id=self.market_id).values_list("id", "name", "parent_id"))
        if self.pk is None:
            parent = "" if self.parent_id is None else dotted_paths(rows).get(self.parent_id, "")
            return f"{parent}.{self.name}" if parent else self.name
        return dotted_paths([r if r[0] != self.pk else (self.pk, self.name, self.parent_id) for r in rows])[self.pk]


class ResourceType(models.Model):
    """A resource type with its capacity in units (slots), e.g. map and reduce slots (paper 000).

    ``stage`` orders types within a job: with staged execution, tasks of a later
    stage start only when the job's earlier stages are done (reduces after maps).
    """

    # no index of its own: the unique constraint below leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="resource_types", db_index=False)
    name = models.CharField(max_length=40)
    capacity = models.PositiveIntegerField()
    stage = models.PositiveSmallIntegerField(default=0)
    unit = models.CharField(max_length=20, default="slot")
    reserve_price = models.FloatField(default=0.0, help_text=(
        "The least the market sells a slot-second of this type for, money per slot-second, set by staff: a bid whose "
        "budget is below it times the bid's work is refused, and no quote prices below it (docs/economy.md)."))

    objects = NoKeyLockManager()  # row locks: FOR NO KEY UPDATE (infra.locking)

    class Meta:
        ordering: ClassVar[list[str]] = ["stage", "id"]
        constraints = (
            models.UniqueConstraint(fields=["market", "name"], name="resource_type_unique_name"),
            models.CheckConstraint(condition=Q(capacity__gt=0), name="resource_type_capacity_positive"),
            models.CheckConstraint(condition=Q(reserve_price__gte=0), name="resource_type_reserve_not_negative"),
        )

    def __str__(self) -> str:
        return f"{self.name} ({self.capacity} {self.unit}s)"
