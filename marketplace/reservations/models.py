"""ERA reservations (paper 001, Secs. 2-3): settings, quotes and accepted reservations.

A tenant asks for "W units of a resource type for T seconds inside [A, D),
worth at most V". A :class:`ReservationQuote` answers with the cheapest start
and its price, valid until ``expires_at`` (wall time); accepting it books a
:class:`Reservation`: a job of W tasks of T seconds on that type, paid its
fixed price at acceptance through the ledger, whose units the market's Plan
holds for it in [start, end). Times prefixed ``sim_`` or named start / end /
arrival / deadline are simulated seconds on the market clock.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.utils import timezone

from marketplace.ledger.models import MONEY
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.models.tenants import Tenant


class ReservationSettings(models.Model):
    """A market's ERA knobs (one row per market, made on first use with these defaults)."""

    class Predictor(models.TextChoices):
        CONSTANT = "constant", "Constant reserve price"
        SPREADING = "spreading", "Past requests spread over their windows"
        LP = "lp", "LP-based (value-maximising allocation of past requests)"

    market = models.OneToOneField(Market, on_delete=models.CASCADE, related_name="reservation_settings")
    slot_seconds = models.FloatField(default=60.0, help_text="Simulated seconds per slot (the unit of time of quotes).")
    horizon_slots = models.PositiveIntegerField(default=1440, help_text="Slots ahead that can be reserved.")
    predictor = models.CharField(max_length=10, choices=Predictor.choices, default=Predictor.SPREADING)
    reserve_price = models.FloatField(default=0.01, help_text="Floor unit price, money per unit-slot.")
    list_price = models.FloatField(null=True, blank=True, help_text="On-demand unit price (money per unit-slot); clamps ERA prices.")
    max_discount = models.FloatField(default=0.35, help_text="Largest discount off the list price, in [0, 1].")
    late_penalty = models.FloatField(default=0.0, help_text="Exponential penalty per slot of later start (choice only).")
    quote_ttl_seconds = models.FloatField(default=300.0, help_text="Wall seconds a quote stays valid.")
    period_slots = models.PositiveIntegerField(default=1440, help_text="Slots per demand cycle (a day of 1-minute slots).")
    book_version = models.BigIntegerField(default=0, help_text="Rises with every booking: a quote of an older version is re-priced.")

    class Meta:
        verbose_name_plural = "reservation settings"
        constraints = (
            models.CheckConstraint(condition=Q(slot_seconds__gt=0), name="era_slot_positive"),
            models.CheckConstraint(condition=Q(max_discount__gte=0) & Q(max_discount__lte=1), name="era_discount_unit_interval"),
            models.CheckConstraint(condition=Q(reserve_price__gte=0), name="era_reserve_price_non_negative"),
            models.CheckConstraint(condition=Q(late_penalty__gte=0), name="era_late_penalty_non_negative"),
        )

    def __str__(self) -> str:
        return f"ERA settings of {self.market}"


class ReservationQuote(models.Model):
    """A price for a reservation request, not yet a commitment (paper 001, Sec. 1.1 footnote 5)."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"
        EXPIRED = "expired", "Expired / re-priced"

    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="reservation_quotes")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="reservation_quotes")
    resource_type = models.ForeignKey(ResourceType, on_delete=models.PROTECT)
    units = models.PositiveIntegerField(help_text="W: units held at once.")
    duration = models.FloatField(help_text="T: simulated seconds (a whole number of slots).")
    arrival = models.FloatField(help_text="A: the window's first second.")
    deadline = models.FloatField(help_text="D: the window's end (exclusive).")
    value = models.DecimalField(null=True, blank=True, help_text="V: the most the tenant would pay (never used to set the price).", **MONEY)
    start = models.FloatField(help_text="The cheapest start (simulated seconds).")
    price = models.DecimalField(help_text="Price of the whole reservation at that start.", **MONEY)
    offers = models.JSONField(default=list, help_text="[start s, price] of every start, by start (price null: no room).")
    book_version = models.BigIntegerField()
    quoted_at = models.FloatField(null=True, blank=True, help_text="Simulated seconds on the market clock when it was priced.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    replaced_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        constraints = (
            models.CheckConstraint(condition=Q(units__gt=0) & Q(duration__gt=0), name="quote_size_positive"),
            models.CheckConstraint(condition=Q(deadline__gt=models.F("arrival")), name="quote_window_not_empty"),
            models.CheckConstraint(condition=Q(price__gte=0), name="quote_price_non_negative"),
        )

    def __str__(self) -> str:
        return f"quote {self.pk}: {self.units} x {self.duration:g}s at {self.start:g} for {self.price}"

    @property
    def unit_rate(self) -> float:
        """The price per slot-second (money): the whole price over units x duration, the unit every
        price of the market is compared in (docs/economy.md)."""
        return float(self.price) / (self.units * self.duration) if self.units and self.duration else 0.0

    @property
    def paid_rate(self) -> float:
        """What the tenant pays per slot-second of its work, money: the price over the work of the job a
        reservation books (W tasks of T seconds), so the same number as :attr:`unit_rate`."""
        return self.unit_rate

    @property
    def shown_status(self) -> str:
        """The status a tenant sees: an open quote past its expiry reads "expired" (it is
        re-priced if accepted)."""
        if self.status == self.Status.OPEN and self.expires_at <= timezone.now():
            return "expired"
        return str(self.status)


class Reservation(models.Model):
    """An accepted reservation: its job gets ``units`` of ``resource_type`` in [start, end)."""

    # no index of its own: served by an index below that leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="reservations", db_index=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="reservations")
    # no index of its own: the unique constraint below leads with it
    job = models.ForeignKey(Job, on_delete=models.PROTECT, related_name="reservations", db_index=False,
                            help_text="The job the units are held for (one reservation per resource type).")
    resource_type = models.ForeignKey(ResourceType, on_delete=models.PROTECT)
    units = models.PositiveIntegerField()
    start = models.FloatField()
    end = models.FloatField()
    arrival = models.FloatField(help_text="The request's window [arrival, deadline).")
    deadline = models.FloatField()
    price = models.DecimalField(**MONEY)
    value = models.DecimalField(null=True, blank=True, **MONEY)
    quote = models.OneToOneField(ReservationQuote, null=True, blank=True, on_delete=models.SET_NULL, related_name="reservation")
    source = models.CharField(max_length=20, default="era", help_text="Which mechanism booked it (era, deadline, ...).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        constraints = (
            models.CheckConstraint(condition=Q(units__gt=0), name="reservation_units_positive"),
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="reservation_window_not_empty"),
            models.CheckConstraint(condition=Q(price__gte=0), name="reservation_price_non_negative"),
        )
        indexes = (models.Index(fields=["market", "resource_type", "end"]),)
        constraints += (models.UniqueConstraint(fields=["job", "resource_type"], name="reservation_one_per_job_and_type"),)

    def __str__(self) -> str:
        return f"reservation {self.pk}: {self.units} {self.resource_type.name} in [{self.start:g}, {self.end:g})"

    @property
    def unit_rate(self) -> float:
        """The price per slot-second (money): price over units x (end - start)."""
        span = self.units * (self.end - self.start)
        return float(self.price) / span if span > 0 else 0.0

    @property
    def paid_rate(self) -> float:
        """What the tenant pays per slot-second of its work, money: the price over its job's work (W tasks
        of end - start seconds), the same number as :attr:`unit_rate`."""
        return self.unit_rate
