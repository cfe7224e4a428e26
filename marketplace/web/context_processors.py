"""Template context shared by every page: the user's roles and the currency's name."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from marketplace.market import roles as roles_module


def roles(request: HttpRequest) -> dict[str, Any]:
    """``roles``: the logged-in user's roles (``market.roles.Roles``), read lazily (pages that do not
    render the navigation cost no query). ``templates/_nav.html`` offers only the links the
    role can use, so no one is shown a link that answers 403."""
    return {"roles": SimpleLazyObject(lambda: roles_module.roles_of(getattr(request, "user", None))),
            "currency": settings.MARKET_CURRENCY}
