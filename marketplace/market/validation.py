"""Strict parsing of tenant input: money amounts and free text.

Python's ``Decimal`` is lenient: ``Decimal("١٢") == 12`` (any Unicode decimal
digit), ``Decimal("1_000") == 1000`` (PEP 515 separators), ``Decimal(" 5 ")``
strips spaces, and ``"1e3"``, ``"NaN"`` and ``"Infinity"`` all parse. A money
field accepts none of that: only ASCII ``[0-9]+(.[0-9]+)?`` with an optional
leading minus (refused later by the range checks), or a JSON number. Every
money or amount field (``api.fields.StrictDecimalField``, the bid form through
``auction.services.parse_budget``, the services themselves) parses through
:func:`parse_decimal_strict`, so the layers agree on what a number is.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from django.core.exceptions import ValidationError


class StateConflict(ValidationError):
    """A request that the object's current state refuses (cancelling an ended job, accepting a
    quote twice): a field error for the pages, a 409 Conflict for the API
    (``api.conventions.service_errors``)."""


_DECIMAL = re.compile(r"-?[0-9]{1,30}(?:\.[0-9]{1,30})?", re.ASCII)

NOT_A_NUMBER = "Enter a plain decimal number using the digits 0-9 and an optional '.' (no spaces, separators or exponents)."


def parse_decimal_strict(value: object) -> Decimal:
    """A ``Decimal`` from an ASCII decimal string, an ``int`` or a finite ``float``.

    Args:
        value: a string such as ``"12.5"`` (ASCII digits only, no sign but ``-``,
            no whitespace, ``_``, exponent, NaN or Infinity), or an int/float as a
            JSON parser produces (``bool`` is refused).

    Raises:
        ValidationError: with :data:`NOT_A_NUMBER` (the caller names the field).
    """
    if isinstance(value, bool):
        raise ValidationError(NOT_A_NUMBER, code="invalid")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(NOT_A_NUMBER, code="invalid")
        return Decimal(repr(value))  # the shortest repr: 0.1 -> Decimal("0.1"), not its binary expansion
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValidationError(NOT_A_NUMBER, code="invalid")
        return value
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        return Decimal(value)
    raise ValidationError(NOT_A_NUMBER, code="invalid")
