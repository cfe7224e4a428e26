"""Deadline bookings: a job booked at the least payment that meets its deadline (paper 003)."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q

from marketplace.ledger.models import MONEY
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market


class DeadlineBooking(models.Model):
    """The quote a job was booked at (``deadlines.services.deadline_book``).

    Times prefixed ``sim_`` are simulated seconds on the market clock; the
    others are lengths in simulated seconds. The job holds ``slots[j]`` units of
    resource type j (resource-type order: stage, id) over [sim_start, sim_end)
    as reservations in the market's Plan, at the fixed ``payment``.
    """

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="deadline_booking")
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="deadline_bookings")
    sim_deadline = models.FloatField(help_text="The tenant's deadline D, simulated seconds on the market clock.")
    sim_start = models.FloatField()
    sim_end = models.FloatField(help_text="End of the reservations: the deadline (it covers the guaranteed interval).")
    alpha_err = models.FloatField(default=1.0, help_text="Lower bound of estimate / real work (paper 003, Definition 2).")
    beta_err = models.FloatField(default=1.0, help_text="Upper bound of estimate / real work.")
    planned_deadline = models.FloatField(help_text="D' = alpha_err * (D - start), seconds (paper 003, Eq. 22).")
    exec_time = models.FloatField(help_text="Planned execution time of the booked slots, seconds.")
    guarantee_low = models.FloatField(help_text="Least real execution time under the estimate range, seconds (Theorem 4).")
    guarantee_high = models.FloatField(help_text="Greatest real execution time under the estimate range, seconds (Theorem 4).")
    slots = models.JSONField(help_text="Units per resource type, in resource-type order.")
    unit_prices = models.JSONField(help_text="Money per unit-second per resource type used for the quote.")
    price_source = models.CharField(max_length=40)
    payment = models.DecimalField(**MONEY)
    continuous_payment = models.FloatField(help_text="Paper 003's optimum with divisible resources (Alg. 1), money.")
    work = models.FloatField(null=True, blank=True, help_text="The work booked: tasks x seconds per task, summed, slot-seconds.")
    quoted_start = models.FloatField(null=True, blank=True, help_text=(
        "When the quote the tenant accepted said the slots are free, simulated seconds on the market clock."))
    booked_start = models.FloatField(null=True, blank=True, help_text=(
        "When the booking's slots are free (booking time + its wait), simulated seconds on the market clock."))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        constraints = (
            models.CheckConstraint(condition=Q(payment__gt=0), name="deadline_booking_payment_positive"),
            models.CheckConstraint(condition=Q(sim_end__gt=models.F("sim_start")), name="deadline_booking_window_nonempty"),
        )

    def __str__(self) -> str:
        return f"deadline booking of job {self.job_id} by t={self.sim_deadline}s"

    @property
    def paid_rate(self) -> float | None:
        """What the tenant pays per slot-second of its work: payment / work, money per slot-second
        (None for a booking made before the work was stored)."""
        return float(self.payment) / self.work if self.work else None
