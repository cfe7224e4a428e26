"""DRF fields shared by the API's serializers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, tzinfo
from decimal import Decimal
from typing import Any, ClassVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.utils import timezone
from django.utils.functional import lazy
from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

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


# --- JSON types, strictly ------------------------------------------------------------------
# DRF coerces: ``float(False)`` is 0.0, ``str(0)`` is "0", "true" is True. The API reads JSON,
# whose types the schema states; a value of another JSON type is a field error (400), so a
# client's mistake (``"min_utility": false``) is not taken for a number.
WRONG_TYPE = "Expected {expected}, got {got}."


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _expected(field: serializers.Field) -> tuple[str, tuple[type, ...]] | None:
    """The JSON type a field reads (its name and the Python types json.loads gives it), or None: any."""
    if isinstance(field, serializers.BooleanField):
        return "a boolean", (bool,)
    if isinstance(field, serializers.IntegerField | serializers.FloatField):
        return "a number", (int, float)
    if isinstance(field, serializers.DecimalField):
        return "a decimal string", (str,)
    if isinstance(field, serializers.ChoiceField | serializers.CharField):
        return "a string", (str,)
    return None


def json_type_errors(field: serializers.Field, value: object) -> list[str]:
    """The wrong-type message for ``value`` read by ``field`` (empty when the type is right or
    null, which the field itself judges); list and dict fields check their children."""
    if value is None:
        return []
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        return next((json_type_errors(field.child, v) for v in value if json_type_errors(field.child, v)), [])
    if isinstance(field, serializers.DictField) and isinstance(value, dict):
        return next((json_type_errors(field.child, v) for v in value.values() if json_type_errors(field.child, v)), [])
    expected = _expected(field)
    if expected is None:
        return []
    name, types = expected
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
        return []
    return [WRONG_TYPE.format(expected=name, got=_json_type(value))]


class StrictJSON:
    """A serializer mixin (first base): every writable field refuses a value of the wrong JSON type
    (a boolean in a number field, a number in a string field, ...) with a field error, all at once."""

    def to_internal_value(self, data: Any) -> Any:
        errors: dict[str, Any] = {}
        if isinstance(data, Mapping):
            for name, field in self.fields.items():  # type: ignore[attr-defined]
                if not field.read_only and name in data:
                    wrong = json_type_errors(field, data[name])
                    if wrong:
                        errors[name] = wrong
        try:
            value = super().to_internal_value(data)  # type: ignore[misc]
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, dict):
                raise
            raise serializers.ValidationError(dict(exc.detail) | errors) from None  # every field's error at once
        if errors:
            raise serializers.ValidationError(errors)
        return value


def money_pattern(max_value: Decimal) -> str:
    """A regular expression for the amounts an input field takes: from the smallest amount
    (``MONEY_QUANTUM``) to ``max_value`` (a power of ten), at most ``MONEY_PLACES`` decimal
    places, without sign, exponent or leading zeros. The schema states it as the field's pattern."""
    digits = len(str(int(max_value))) - 1
    if max_value != Decimal(10) ** digits or MONEY_PLACES != 4:
        raise ValueError(f"money_pattern expects a power of ten and 4 places, got {max_value}")
    below_one = r"0\.(?:[1-9][0-9]{0,3}|0[1-9][0-9]{0,2}|00[1-9][0-9]?|000[1-9])"
    return rf"^(?:[1-9][0-9]{{0,{digits - 1}}}(?:\.[0-9]{{1,4}})?|{int(max_value)}(?:\.0{{1,4}})?|{below_one})$"


def money_format(max_value: Decimal) -> RegexValidator:
    """The validator of :func:`money_pattern` (drf-spectacular puts its regex in the schema)."""
    return RegexValidator(money_pattern(max_value), message=(
        f"Enter an amount from {MONEY_QUANTUM} to {int(max_value)} as a decimal string with at most {MONEY_PLACES} "
        "decimal places, without sign, exponent or leading zeros."))


def representations(fields: tuple[tuple[str, serializers.Field], ...]) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """(name, function) per (name, field): the function writes a non-null value as ``field.to_representation``
    does. A plain ``DateTimeField`` in ISO 8601 reads the current time zone once, here, not once per value
    (DRF asks ``timezone.get_current_timezone`` for every datetime it writes: a context-variable lookup
    that was a few percent of a page of jobs); call this once per answer, so that the zone is the answer's.
    Every other field is its own ``to_representation``."""
    zone = timezone.get_current_timezone()
    return tuple((name, _datetime_text(field, zone) if _plain_datetime(field) else field.to_representation) for name, field in fields)


def _plain_datetime(field: serializers.Field) -> bool:
    return (type(field) is serializers.DateTimeField and not hasattr(field, "timezone")
            and str(getattr(field, "format", api_settings.DATETIME_FORMAT) or "").lower() == ISO_8601)


def _datetime_text(field: serializers.Field, zone: tzinfo) -> Callable[[Any], Any]:
    def text(value: Any) -> Any:
        if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
            return field.to_representation(value)  # naive, a string, a date: DRF's own rules
        try:
            out = value.astimezone(zone).isoformat()
        except OverflowError:
            return field.to_representation(value)  # DRF's error
        return out[:-6] + "Z" if out.endswith("+00:00") else out

    return text
