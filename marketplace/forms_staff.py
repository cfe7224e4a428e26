"""Staff forms: the cross-tenant job filter and a ledger credit or debit."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django import forms
from django.conf import settings

from marketplace.models.accounts import Tenant
from marketplace.models.jobs import Job
from marketplace.services.ledger_adjust import MAX_ADJUSTMENT, PLACES, REASON_MAX, REASON_MIN


class StaffJobFilterForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), required=False, empty_label="All tenants",
                                    to_field_name="name")
    status = forms.ChoiceField(choices=[("", "All statuses"), *Job.Status.choices], required=False)

    def __init__(self, *args: object, market: object = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["tenant"].queryset = Tenant.objects.filter(market=market).order_by("name")  # type: ignore[attr-defined]


class LedgerAdjustForm(forms.Form):
    """Field checks here (the browser shows them at once); the service checks them again."""

    # A fresh key per rendered form: a double click books one adjustment (services.idempotency).
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
