"""Forms of the auction's pages: the bid (budget, utility, work per resource type) and the job filter.

Field-level validation here; the rules live in ``auction.services``, whose errors the page puts
next to their fields (``web.forms.apply_service_errors``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django import forms
from django.core.exceptions import ValidationError

from marketplace.auction.models import WorkItem
from marketplace.auction.services import MAX_TASK_DURATION_S, MAX_TASKS, parse_budget
from marketplace.ledger.money import MONEY_PLACES, currency, money_title
from marketplace.market.models.jobs import Job
from marketplace.market.models.queues import ResourceType
from marketplace.web.forms import apply_service_errors, positive


@dataclass(frozen=True)
class WorkRow:
    """The three bound fields of one resource type, for the form's work table."""

    resource_type: ResourceType
    tasks: forms.BoundField
    duration: forms.BoundField
    weight: forms.BoundField

    @property
    def fields(self) -> tuple[forms.BoundField, forms.BoundField, forms.BoundField]:
        return self.tasks, self.duration, self.weight


class BidForm(forms.Form):
    """A bid (paper 000, Sec. 3): budget, utility function, and per resource type the work
    (tasks x seconds per task) and the utility weight w_ij. Fields are built from the
    market's ``ResourceType`` rows: ``<key>_tasks``, ``<key>_duration``, ``<key>_weight``."""

    name = forms.CharField(max_length=120, required=False, label="Job name",
                           widget=forms.TextInput(attrs={"placeholder": "e.g. nightly-etl", "autocomplete": "off"}))
    budget = forms.CharField(
        strip=False,  # " 5 " is refused, as in the API (market.validation.parse_decimal_strict)
        label="Budget", help_text="Held now, charged when the job completes. A positive amount, at most 4 decimal places.",
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}),
    )
    # A fresh key per rendered form: submitting it twice (a double click, a reload after a
    # timeout) places one bid (views.bid_new, ledger.idempotency).
    idempotency_key = forms.CharField(widget=forms.HiddenInput, required=False, max_length=255,
                                      initial=lambda: uuid.uuid4().hex)
    utility = forms.ChoiceField(
        choices=Job.Utility.choices, initial=Job.Utility.LINEAR, widget=forms.RadioSelect, label="Utility function",
        help_text="How the job values its share s_j of each resource type, weighted by w_j.",
    )
    job_class = forms.CharField(
        max_length=120, required=False, label="Job class (optional)",
        widget=forms.TextInput(attrs={"placeholder": "defaults to the job name", "autocomplete": "off"}),
        help_text="Repeats of one kind of job share a class; their utility weights are learnt from completed ones.",
    )
    use_adopted_utility = forms.BooleanField(
        required=False, label="Use my adopted utility for this class",
        help_text="Bid with the weights and utility kind adopted on the Utility fits page instead of those entered below.",
    )
    min_utility = forms.FloatField(
        required=False, label="SLO: minimum utility (optional)",
        widget=forms.NumberInput(attrs={"step": "any", "autocomplete": "off"}),
        help_text="If set, the budget is charged only when the utility of the job's average shares reaches it; "
                  "the job may wait outside the prolific pool (the jobs the auction serves) on idle units (paper 000, Sec. 6).",
    )

    def __init__(self, *args: object, resource_types: Iterable[ResourceType], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["budget"].label = money_title("Budget")
        self.fields["budget"].help_text = (
            f"Held now, charged when the job completes. A positive amount in {currency()}, at most {MONEY_PLACES} decimal places."
        )
        self.resource_types = list(resource_types)
        self.keys = self._field_keys(self.resource_types)
        for k, rt in enumerate(self.resource_types):
            key = self.keys[rt.pk]
            self.fields[f"{key}_tasks"] = forms.IntegerField(
                label=f"{rt.name} tasks", min_value=0, max_value=MAX_TASKS, initial=10 if k == 0 else 0,
                widget=forms.NumberInput(attrs={"min": 0, "step": 1}),
            )
            self.fields[f"{key}_duration"] = forms.FloatField(
                label=f"{rt.name} seconds per task (market clock)", initial=30.0, max_value=MAX_TASK_DURATION_S, validators=[positive],
                widget=forms.NumberInput(attrs={"min": 0, "step": "any"}),
            )
            self.fields[f"{key}_weight"] = forms.FloatField(
                label=f"{rt.name} utility weight", initial=1.0, min_value=0, max_value=1e6,
                widget=forms.NumberInput(attrs={"min": 0, "step": "any"}),
            )

    @staticmethod
    def _field_keys(types: list[ResourceType]) -> dict[int, str]:
        """resource type pk -> a field-name-safe key (its name when that is safe and unique)."""
        keys: dict[int, str] = {}
        for rt in types:
            key = re.sub(r"\W", "_", rt.name.strip().lower()) or f"rt{rt.pk}"
            keys[rt.pk] = key if key not in keys.values() else f"{key}_{rt.pk}"
        return keys

    def clean_budget(self) -> Decimal:
        try:
            return parse_budget(self.cleaned_data["budget"])
        except ValidationError as exc:
            raise ValidationError(exc.message_dict.get("budget", exc.messages)) from None

    @property
    def work_rows(self) -> list[WorkRow]:
        return [WorkRow(rt, self[f"{self.keys[rt.pk]}_tasks"], self[f"{self.keys[rt.pk]}_duration"], self[f"{self.keys[rt.pk]}_weight"])
                for rt in self.resource_types]

    def work(self) -> list[WorkItem]:
        """The cleaned work as the service's ``WorkItem`` list, leaving out types without tasks
        (call after ``is_valid()``; an empty list gets the service's "needs at least one task")."""
        d = self.cleaned_data
        items = [
            WorkItem(rt.name, d[f"{self.keys[rt.pk]}_tasks"], d[f"{self.keys[rt.pk]}_duration"], d[f"{self.keys[rt.pk]}_weight"])
            for rt in self.resource_types
        ]
        return [it for it in items if it.tasks > 0]

    def add_service_errors(self, exc: ValidationError) -> None:
        apply_service_errors(self, exc)


class JobFilterForm(forms.Form):
    """The job list's filters: whose jobs (placed by the tenant, or replayed from a trace), status, a name search."""

    scope = forms.ChoiceField(choices=[("all", "All jobs"), ("mine", "Mine (placed by me)"), ("replayed", "Replayed from a trace")],
                              required=False, label="Show")
    status = forms.ChoiceField(choices=[("", "All statuses"), *Job.Status.choices], required=False, label="Status")
    q = forms.CharField(max_length=120, required=False, label="Name contains", strip=True)

    def filters(self) -> dict[str, str]:
        """``{"status", "scope", "search"}`` for ``market.selectors.tenant_job_list`` ("" = no filter)."""
        d = self.cleaned_data if self.is_valid() else {}
        return {"status": d.get("status") or "", "scope": d.get("scope") or "all", "search": d.get("q") or ""}
