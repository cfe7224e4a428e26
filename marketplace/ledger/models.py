"""Tenants' accounts and the append-only ledger (the ``Tenant`` is the core's: ``market.models.tenants``).

Every money movement is a ``LedgerEntry``; an account's ``available`` and
``held`` are the running sums of its entries' deltas (``ledger_reconcile``
checks this). Database constraints keep both non-negative.
"""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q

from marketplace.infra.locking import NoKeyLockManager

MONEY = {"max_digits": 18, "decimal_places": 4}


class Account(models.Model):
    """A tenant's money: ``available`` to bid, ``held`` for running bids."""

    tenant = models.OneToOneField("marketplace.Tenant", on_delete=models.CASCADE, related_name="account")
    available = models.DecimalField(default=Decimal("0"), **MONEY)
    held = models.DecimalField(default=Decimal("0"), **MONEY)
    updated_at = models.DateTimeField(auto_now=True)

    objects = NoKeyLockManager()  # row locks: FOR NO KEY UPDATE (infra.locking)

    class Meta:
        constraints = (
            models.CheckConstraint(condition=Q(available__gte=0), name="account_available_non_negative"),
            models.CheckConstraint(condition=Q(held__gte=0), name="account_held_non_negative"),
        )

    def __str__(self) -> str:
        return f"{self.tenant}: {self.available} available, {self.held} held"


class LedgerEntry(models.Model):
    """One money movement; rows are never updated or deleted.

    Deltas by kind: deposit (+available), hold (-available, +held),
    charge (-held), release (+available, -held); staff adjustments credit
    (+available) and debit (-available), with the reason as memo and the staff
    member as ``created_by`` (``ledger.services.account_adjust``).
    """

    class Kind(models.TextChoices):
        DEPOSIT = "deposit", "Deposit"
        HOLD = "hold", "Hold"  # for a bid, a Cura job, a reservation's run: the memo and the job column say which
        CHARGE = "charge", "Charge"  # on completion (bids) or up front (bookings, reservations): the memo says which
        RELEASE = "release", "Release of a hold"
        CREDIT = "credit", "Credit by staff"
        DEBIT = "debit", "Debit by staff"

    # no index of its own: served by an index below that leads with it
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="entries", db_index=False)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    amount = models.DecimalField(**MONEY)
    available_delta = models.DecimalField(**MONEY)
    held_delta = models.DecimalField(**MONEY)
    available_after = models.DecimalField(**MONEY)
    held_after = models.DecimalField(**MONEY)
    job = models.ForeignKey("marketplace.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="ledger_entries")
    memo = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        verbose_name_plural = "ledger entries"
        # (account, newest first): an account's page of entries, and the ids of a far page, from the index alone
        indexes = (models.Index(fields=["account", "-id"], name="ledger_account_newest"),)
        constraints = (
            models.CheckConstraint(condition=Q(amount__gt=0), name="ledger_amount_positive"),
            models.CheckConstraint(condition=Q(available_after__gte=0) & Q(held_after__gte=0), name="ledger_after_non_negative"),
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.amount}"

    def save(self, *args: object, **kwargs: object) -> None:
        # Append-only: an existing entry is never rewritten (corrections are new entries).
        if self.pk is not None:
            raise ValueError("ledger entries are append-only")
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict[str, int]]:
        raise ValueError("ledger entries are append-only")


class IdempotencyKey(models.Model):
    """One used key: who used it, on what request (``fingerprint``), and the answer given."""

    # no index of its own: the unique (user, key) below leads with it
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idempotency_keys", db_index=False)
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
