"""What every form shares: service errors turned into form errors, and times on the market clock
typed as a user thinks of them ("in 2 h", "+900 s").

The services validate again (they are the authority, and the API calls them too); the forms
exist to put each message next to the field it concerns.
"""

from __future__ import annotations

import math
import re
from typing import Any

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


UNIT_SECONDS = {"s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
                "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
                "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
                "d": 86400.0, "day": 86400.0, "days": 86400.0}
_AMOUNT = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)")
_HMS = re.compile(r"(\d+):([0-5]\d)(?::([0-5]\d(?:\.\d*)?))?")
MARKET_TIME_HELP = "“in 2 h”, “+900 s”, “now”, or a time on the market clock (“1:30:00” or 5400 s)."


def _duration(text: str) -> float | None:
    """``"2 h 30 min"``, ``"900"``, ``"1h30m"``: seconds, or None if ``text`` is not such a sum
    (a bare number is seconds)."""
    pos, total, found = 0, 0.0, False
    text = text.strip()
    while pos < len(text):
        m = _AMOUNT.match(text, pos)
        if m is None or (m.group(2) and m.group(2) not in UNIT_SECONDS):
            return None
        total += float(m.group(1)) * UNIT_SECONDS[m.group(2) or "s"]
        found, pos = True, m.end()
        while pos < len(text) and text[pos] in " ,":
            pos += 1
    return total if found else None


def market_time_parse(text: str, *, now: float) -> float:
    """A time on the market clock from what a user types, in simulated seconds.

    Relative to ``now`` (simulated s): ``"now"``, ``"in 2 h"``, ``"+900 s"``, ``"+1h30m"``, ``"in 15 min"``;
    absolute: ``"1:30:00"`` or ``"1:30"`` (h:mm:ss or h:mm, as the header clock shows it) or a number of
    seconds (``"5400"``, ``"5400 s"``). Units: s, min (or m), h, d and their long names.
    Raises ``ValidationError`` for anything else."""
    t = text.strip().lower()
    if t == "now":
        return now
    relative = t.startswith(("+", "in "))
    body = t[1:] if t.startswith("+") else t[3:] if t.startswith("in ") else t
    hms = _HMS.fullmatch(body.strip())
    if hms is not None:
        seconds = int(hms.group(1)) * 3600.0 + int(hms.group(2)) * 60.0 + float(hms.group(3) or 0.0)
    else:
        parsed = _duration(body)
        if parsed is None:
            raise ValidationError(f"Not a time: {text!r}. Try {MARKET_TIME_HELP}", code="invalid")
        seconds = parsed
    if not math.isfinite(seconds):
        raise ValidationError(f"Not a time: {text!r}: too large.", code="invalid")
    return now + seconds if relative else seconds


class MarketTimeField(forms.Field):
    """A time on the market clock, typed absolute or relative (:func:`market_time_parse`); cleans to
    simulated seconds (float). ``now`` (simulated s) is set by the form when it is built
    (:func:`market_times_at`); the page shows the time it names beside the input
    (``static/js/forms.js``, ``data-market-time``). Text over ``MAX_LENGTH`` characters is refused."""

    MAX_LENGTH = 40
    widget = forms.TextInput

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", MARKET_TIME_HELP)
        super().__init__(*args, **kwargs)
        self.now = 0.0
        self.widget.attrs.update({"data-market-time": "", "autocomplete": "off", "spellcheck": "false",
                                  "maxlength": str(self.MAX_LENGTH)})

    def to_python(self, value: Any) -> float | None:
        text = "" if value in self.empty_values else str(value).strip()
        if not text:
            return None
        if len(text) > self.MAX_LENGTH:
            raise ValidationError(f"At most {self.MAX_LENGTH} characters.", code="max_length")
        return market_time_parse(text, now=self.now)


def market_times_at(form: forms.Form, now: float) -> None:
    """Resolve ``form``'s relative market times against ``now`` (simulated s)."""
    for field in form.fields.values():
        if isinstance(field, MarketTimeField):
            field.now = now
