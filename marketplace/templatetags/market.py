"""Template filters for money and prices (``{% load market %}``; rules in ``marketplace.ledger.money``).

``{{ amount|money }}`` -> ``12.50 credits``; ``{{ amount|money:"bare" }}`` -> ``12.50`` (for a
table cell whose header carries the currency: ``{% currency %}``); ``{{ rate|price:"VM-second" }}``
-> ``0.01234 credits per VM-second``; ``{% price_unit "slot" %}`` -> ``credits per slot``.
"""

from __future__ import annotations

from django import template

from marketplace.ledger import money as m

register = template.Library()


@register.filter
def money(value: object, arg: str = "") -> str:
    return m.format_amount(value) if arg == "bare" else m.format_money(value)


@register.filter
def price(value: object, per: str = m.SLOT) -> str:
    return m.format_price(value, per)


@register.filter
def price_bare(value: object) -> str:
    """A price's number alone (four significant digits), for a cell whose header has the unit."""
    return m.format_price_number(value)


@register.simple_tag
def currency() -> str:
    return m.currency()


@register.simple_tag
def price_unit(per: str = m.SLOT) -> str:
    return m.price_unit(per)
