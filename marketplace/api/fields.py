"""DRF fields shared by the API's serializers."""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.functional import lazy
from rest_framework import serializers

from marketplace.market.validation import NOT_A_NUMBER, parse_decimal_strict


class StrictDecimalField(serializers.DecimalField):
    """A money field that refuses what ``Decimal`` would quietly accept: non-ASCII digits
    (``"١٢"``), separators (``"1_000"``), surrounding spaces (``" 5 "``), exponents, NaN and
    Infinity (``marketplace.market.validation.parse_decimal_strict``). Range and decimal-place checks
    are DRF's ``DecimalField``'s."""

    default_error_messages: ClassVar[dict[str, str]] = {"invalid": NOT_A_NUMBER}

    def to_internal_value(self, data: object) -> Decimal:
        try:
            value = parse_decimal_strict(data)
        except DjangoValidationError:
            self.fail("invalid")
        return super().to_internal_value(str(value))  # type: ignore[no-any-return]


# --- Money: one format in every answer -----------------------------------------------------
# Amounts of money (budgets, holds, charges, balances, ledger entries, payments, costs) are
# JSON strings holding a decimal with exactly MONEY_PLACES places ("25.5000"), the ledger's
# precision, in the currency ``settings.MARKET_CURRENCY``: a string, so no client parses
# them as binary floats. Prices are rates, not amounts: JSON numbers whose help text names
# the unit (money per slot, per unit-slot-second, ...).
MONEY_PLACES = 4
MONEY_QUANTUM = Decimal(1).scaleb(-MONEY_PLACES)


def currency() -> str:
    from django.conf import settings

    return str(settings.MARKET_CURRENCY)


def _money_help(text: str) -> str:
    return f"{text} {money_sentence()}"


def money_sentence() -> str:
    return f"In {currency()}: a decimal string with exactly {MONEY_PLACES} places."


# Lazy: the schema names the currency configured when it is served, not at import.
money_help = lazy(_money_help, str)


def money_text(value: object) -> str | None:
    """An amount as the API writes it: ``"12.3400"``; None for None or a non-finite float."""
    if value is None:
        return None
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        value = Decimal(repr(value))
    amount = value if isinstance(value, Decimal) else Decimal(str(value))
    return str(amount.quantize(MONEY_QUANTUM))


class MoneyField(serializers.DecimalField):
    """An amount, read-only, in the API's one money format (``money_text``)."""

    def __init__(self, *, help_text: str = "An amount of money.", **kwargs: object) -> None:
        kwargs.setdefault("read_only", True)
        super().__init__(max_digits=24, decimal_places=MONEY_PLACES, coerce_to_string=True,  # type: ignore[misc]
                         help_text=money_help(help_text), **kwargs)

    def to_representation(self, value: object) -> str | None:  # type: ignore[override]
        return money_text(value)
