"""DRF fields shared by the API's serializers."""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from marketplace.validation import NOT_A_NUMBER, parse_decimal_strict


class StrictDecimalField(serializers.DecimalField):
    """A money field that refuses what ``Decimal`` would quietly accept: non-ASCII digits
    (``"١٢"``), separators (``"1_000"``), surrounding spaces (``" 5 "``), exponents, NaN and
    Infinity (``marketplace.validation.parse_decimal_strict``). Range and decimal-place checks
    are DRF's ``DecimalField``'s."""

    default_error_messages: ClassVar[dict[str, str]] = {"invalid": NOT_A_NUMBER}

    def to_internal_value(self, data: object) -> Decimal:
        try:
            value = parse_decimal_strict(data)
        except DjangoValidationError:
            self.fail("invalid")
        return super().to_internal_value(str(value))  # type: ignore[no-any-return]
