"""Staff forms: the cross-tenant job filter and a ledger credit or debit."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from marketplace.ledger.services import MAX_ADJUSTMENT, PLACES, REASON_MAX, REASON_MIN
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.config import T_WAIT_REQUIRED, parse_t_wait
from marketplace.web.forms import positive
from scheduler.registry import DISPATCH, FAIRSHARE, MECHANISMS, history_choices


class StaffJobFilterForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), required=False, empty_label="All tenants",
                                    to_field_name="name")
    status = forms.ChoiceField(choices=[("", "All statuses"), *Job.Status.choices], required=False)

    def __init__(self, *args: object, market: object = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["tenant"].queryset = Tenant.objects.filter(market=market).order_by("name")  # type: ignore[attr-defined]


class LedgerAdjustForm(forms.Form):
    """Field checks here (the browser shows them at once); the service checks them again."""

    # A fresh key per rendered form: a double click books one adjustment (ledger.idempotency).
    idempotency_key = forms.CharField(widget=forms.HiddenInput, required=False, max_length=255, initial=lambda: uuid.uuid4().hex)
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), to_field_name="name")
    direction = forms.ChoiceField(choices=[("credit", "Credit (add to available)"), ("debit", "Debit (take from available)")],
                                  widget=forms.RadioSelect, initial="credit")
    amount = forms.DecimalField(min_value=Decimal(1).scaleb(-PLACES), max_value=MAX_ADJUSTMENT, max_digits=18, decimal_places=PLACES,
                                widget=forms.NumberInput(attrs={"step": "0.0001", "min": "0.0001"}))
    reason = forms.CharField(min_length=REASON_MIN, max_length=REASON_MAX, widget=forms.TextInput(attrs={"size": 60}),
                             help_text="Kept in the tenant's ledger with your name.")

    def __init__(self, *args: object, market: object = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["tenant"].queryset = Tenant.objects.filter(market=market).order_by("name")  # type: ignore[attr-defined]
        self.fields["amount"].label = f"Amount ({settings.MARKET_CURRENCY})"


class ReservePricesForm(forms.Form):
    """Staff: each resource type's reserve price, credits per slot-second (audited by ``reserve_prices_set``)."""

    def __init__(self, *args: object, types: list[object], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.type_names = [str(getattr(t, "name", "")) for t in types]
        for t in types:
            name = str(getattr(t, "name", ""))
            self.fields[f"reserve_{name}"] = forms.FloatField(
                label=f"Reserve price, {name} (credits per slot-second)", min_value=0.0, max_value=1e6,
                initial=float(getattr(t, "reserve_price", 0.0)),
                error_messages={"invalid": "Enter a number of credits per slot-second (0 for none)."},
                widget=forms.NumberInput(attrs={"step": "any", "min": 0}))
        self.fields["reserve_reason"] = forms.CharField(label="Reason (for the audit trail)", max_length=200, required=False)

    def prices(self) -> dict[str, float]:
        """Type name -> price (call after ``is_valid()``)."""
        return {name: float(self.cleaned_data[f"reserve_{name}"]) for name in self.type_names}


class MarketSettingsForm(forms.Form):
    """Administrator knobs (audited by ``market_configure``)."""

    alpha = forms.FloatField(
        label="alpha", min_value=0.0, max_value=1.0, widget=forms.NumberInput(attrs={"step": "any", "min": 0, "max": 1}),
        help_text="Auction exponent: 0 = equal shares, 1 = proportional to money (paper 000, Sec. 3).",
    )
    # A text box, not <input type=number>: browsers blank out what they cannot parse
    # (1e309), which then read as "This field is required"; the server explains instead.
    t_wait = forms.CharField(
        label="T_wait (s, market clock)", max_length=40, error_messages={"required": T_WAIT_REQUIRED},
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}),
        help_text="Starvation timeout of H-LTRF in seconds: 0 = LTRF; 'off' = no timeout, the naive hierarchy (paper 002, Sec. 5.2).",
    )
    mechanism = forms.ChoiceField(label="Mechanism within a queue", choices=MECHANISMS.choices)
    fairshare_policy = forms.ChoiceField(label="Fair-share policy across queues", choices=FAIRSHARE.choices)
    dispatch_mode = forms.ChoiceField(label="Dispatch inside a queue", choices=DISPATCH.choices)
    fairshare_history = forms.ChoiceField(label="Fair-share history", choices=history_choices, required=False)
    fairshare_history_length = forms.FloatField(
        label="Round length L / half-life (s, market clock)", validators=[positive], required=False,
        error_messages={"invalid": "Enter a finite number of seconds."},
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}),
        help_text="Rounds: usage restarts from zero every L seconds. Decay: usage halves every half-life (paper 002, Sec. 6.2.2).",
    )
    clock_speed = forms.FloatField(
        label="Clock speed", validators=[positive], max_value=1e6, widget=forms.NumberInput(attrs={"step": "any", "min": 0}),
        help_text="Simulated seconds per wall-clock second of the live cluster.",
    )
    reason = forms.CharField(label="Reason (for the audit trail)", max_length=200, required=False)

    FIELDS = (
        "alpha", "t_wait", "mechanism", "fairshare_policy", "dispatch_mode", "fairshare_history", "fairshare_history_length",
        "clock_speed",
    )

    @classmethod
    def initial_for(cls, market: Market) -> dict[str, object]:
        initial = {f: getattr(market, f) for f in cls.FIELDS}
        if market.t_wait == float("inf"):
            initial["t_wait"] = "off"
        return initial

    def clean_t_wait(self) -> float:
        try:
            return parse_t_wait(self.cleaned_data["t_wait"])
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["t_wait"]) from None

    def changes(self) -> dict[str, object]:
        """The knob values to pass to ``market_configure`` (call after ``is_valid()``)."""
        return {f: self.cleaned_data[f] for f in self.FIELDS if self.cleaned_data[f] not in (None, "")}
