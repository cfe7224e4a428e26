"""How money is shown: one currency (``settings.MARKET_CURRENCY``) and one rule for decimals.

The rule: money is kept to ``MONEY_PLACES`` (4) decimal places (``ledger.models.MONEY``);
the API gives every amount as a string with exactly those 4 places (``api.fields.money_text``),
and pages show every amount with ``SHOWN_PLACES`` (2), rounded half-even, thousands grouped
(:func:`format_amount`): one format on every page, ``12.50``, never ``12.5``, ``12.500`` or
``12.5000``. A non-zero amount that rounds to zero is shown as ``< 0.01``, never ``0.00``, so a
page never says that something cost nothing when it did. The services refuse amounts with more
places than money is kept with (``auction.services.parse_budget``, which the bid form and the API
both reach).

Prices are rates (floats): :func:`format_price` shows four significant digits, and
:func:`price_unit` names the unit of each mechanism's price (money per slot, per unit-slot,
per VM-second ...).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from django.conf import settings

MONEY_PLACES = 4
MONEY_QUANTUM = Decimal(1).scaleb(-MONEY_PLACES)  # Decimal("0.0001")
SHOWN_PLACES = 2
SHOWN_QUANTUM = Decimal(1).scaleb(-SHOWN_PLACES)  # Decimal("0.01")

# The units prices are given in, named by what one price number buys (not by the mechanism that prices).
SLOT = "slot"  # one slot of a resource type: the auction's implied price, Σ sub-budgets ÷ capacity (paper 000, Sec. 3)
UNIT_SLOT = "unit-slot"  # one unit of a resource for one time slot (ERA's slots, paper 001, Sec. 3)
SLOT_SECOND = "slot-second"  # one slot for one simulated second: the spot rate, deadline quotes (paper 003, Sec. 3)
VM_SECOND = "VM-second"  # one VM for one simulated second (Cura's pools, paper 004, Sec. III-A)


def currency() -> str:
    """The market's currency, shown with every amount (``MARKET_CURRENCY``, default ``credits``)."""
    return str(getattr(settings, "MARKET_CURRENCY", "credits"))


def _decimal(value: object) -> Decimal | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        d = value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None
    return d if d.is_finite() else None


def format_amount(value: object) -> str:
    """``12.5`` -> ``"12.50"``, ``1234567`` -> ``"1,234,567.00"``, ``416.66667`` -> ``"416.67"``
    (half-even to ``SHOWN_PLACES``); ``0.0001`` -> ``"< 0.01"``, ``-0.0001`` -> ``"> -0.01"``; ``"—"`` for none."""
    d = _decimal(value)
    if d is None:
        return "—"
    shown = d.quantize(SHOWN_QUANTUM, rounding=ROUND_HALF_EVEN)
    if shown == 0 and d != 0:
        return f"< {SHOWN_QUANTUM}" if d > 0 else f"> -{SHOWN_QUANTUM}"
    return f"{shown:,.{SHOWN_PLACES}f}"


def format_money(value: object) -> str:
    """An amount with the currency: ``"12.50 credits"`` (``"—"`` for none)."""
    text = format_amount(value)
    return text if text == "—" else f"{text} {currency()}"


def price_unit(per: str) -> str:
    """``"credits per slot-second"`` for ``per="slot-second"``: the unit of a price."""
    return f"{currency()} per {per}"


def format_price_number(value: object) -> str:
    """A price's number alone, four significant digits (for a cell whose header names the unit)."""
    d = _decimal(value)
    return "—" if d is None else f"{float(d):.4g}"


def format_price(value: object, per: str) -> str:
    """A price (a rate, four significant digits) with its unit: ``"0.01234 credits per VM-second"``."""
    text = format_price_number(value)
    return text if text == "—" else f"{text} {price_unit(per)}"


def money_title(label: str) -> str:
    """An axis or column title for amounts: ``"Revenue (credits)"``."""
    return f"{label} ({currency()})"
