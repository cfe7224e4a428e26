"""What every form shares: service errors turned into form errors.

The services validate again (they are the authority, and the API calls them too); the forms
exist to put each message next to the field it concerns.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError


def apply_service_errors(form: forms.Form, exc: ValidationError, field_map: dict[str, str] | None = None) -> None:
    """Attach a service's ValidationError to ``form``: dict keys that name a form field go
    to that field (through ``field_map`` first), everything else to the non-field errors."""
    field_map = field_map or {}
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc.messages)
        return
    for key, messages in exc.message_dict.items():
        field = field_map.get(key, key)
        form.add_error(field if field in form.fields else None, messages)


def positive(value: float) -> None:
    if value <= 0:
        raise ValidationError("Must be greater than zero.")
