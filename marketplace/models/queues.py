"""The queue hierarchy (organisations' contributed shares) and resource types."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from marketplace.models.market import Market


class Queue(models.Model):
    """A node of the queue tree; leaves hold jobs (paper 002, Sec. 5: H-LTRF).

    ``weight`` is relative among siblings: a leaf's fair fraction of the
    cluster is the product of weight / sum(sibling weights) along its path.
    """

    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="queues")
    name = models.CharField(max_length=60)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    weight = models.FloatField(default=1.0)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(weight__gt=0), name="queue_weight_positive"),
            models.UniqueConstraint(fields=["market", "parent", "name"], name="queue_unique_name_per_parent"),
        ]

    def __str__(self) -> str:
        return self.path

    @property
    def path(self) -> str:
        parts = [self.name]
        node = self.parent
        while node is not None:
            parts.append(node.name)
            node = node.parent
        return ".".join(reversed(parts))


class ResourceType(models.Model):
    """A resource type with its capacity in units (slots), e.g. map and reduce slots (paper 000).

    ``stage`` orders types within a job: with staged execution, tasks of a later
    stage start only when the job's earlier stages are done (reduces after maps).
    """

    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="resource_types")
    name = models.CharField(max_length=40)
    capacity = models.PositiveIntegerField()
    stage = models.PositiveSmallIntegerField(default=0)
    unit = models.CharField(max_length=20, default="slot")

    class Meta:
        ordering = ["stage", "id"]
        constraints = [
            models.UniqueConstraint(fields=["market", "name"], name="resource_type_unique_name"),
            models.CheckConstraint(condition=Q(capacity__gt=0), name="resource_type_capacity_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.capacity} {self.unit}s)"
