"""Idempotency keys: a retried money-moving POST returns its first answer and moves nothing.

A client sends ``Idempotency-Key: <up to 255 printable ASCII characters>`` with a
POST; the first request with that key (per user) runs and its successful answer
is stored here, in the same transaction as the money it moved. A repeat with the
same key and the same request (method, path, body) gets the stored answer; with
another request, 422. Keys expire after ``IDEMPOTENCY_KEY_TTL_S`` (24 h by
default); ``services.idempotency`` reads, writes and purges them.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class IdempotencyKey(models.Model):
    """One used key: who used it, on what request (``fingerprint``), and the answer given."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idempotency_keys")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and canonical JSON body.")
    status_code = models.PositiveSmallIntegerField()
    # JSON as text, not jsonb: a replay returns the first answer byte for byte (jsonb reorders keys).
    response = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = (models.UniqueConstraint(fields=["user", "key"], name="idempotency_unique_user_key"),)

    def __str__(self) -> str:
        return f"{self.user_id}:{self.key} -> {self.status_code}"
