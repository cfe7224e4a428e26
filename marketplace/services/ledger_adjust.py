"""Staff credits and debits: a correction of a tenant's balance, through the ledger.

One ``credit`` (+available) or ``debit`` (-available) entry; the reason is its memo and
the staff member its ``created_by``, so the ledger is the audit trail (who, when,
how much, why). Entries are append-only: a wrong adjustment is corrected by another.
"""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import PermissionDenied, ValidationError

from marketplace import roles
from marketplace.models.accounts import LedgerEntry, Tenant
from marketplace.services.ledger import tenant_post

MAX_ADJUSTMENT = Decimal("1000000000")  # as a bid's budget (services.bids.MAX_BUDGET)
PLACES = 4  # the ledger's decimal places (models.accounts.MONEY)
QUANTUM = Decimal(1).scaleb(-PLACES)
REASON_MIN = 5
REASON_MAX = 200
DIRECTIONS = {"credit": LedgerEntry.Kind.CREDIT, "debit": LedgerEntry.Kind.DEBIT}


def _clean(direction: str, amount: Decimal, reason: str) -> tuple[str, str]:
    errors: dict[str, str] = {}
    if direction not in DIRECTIONS:
        errors["direction"] = 'Choose "credit" or "debit".'
    if not isinstance(amount, Decimal) or not amount.is_finite():
        errors["amount"] = "Enter a decimal amount."
    elif amount <= 0:
        errors["amount"] = "The amount must be positive."
    elif amount > MAX_ADJUSTMENT:
        errors["amount"] = f"The amount may not exceed {MAX_ADJUSTMENT}."
    elif amount != amount.quantize(QUANTUM):
        errors["amount"] = f"The ledger keeps {PLACES} decimal places: {amount} cannot be booked exactly."
    reason = reason.strip()
    if len(reason) < REASON_MIN:
        errors["reason"] = f"Say why, in at least {REASON_MIN} characters (it is kept in the ledger)."
    elif len(reason) > REASON_MAX:
        errors["reason"] = f"At most {REASON_MAX} characters."
    if errors:
        raise ValidationError(errors)
    return DIRECTIONS[direction], reason


def account_adjust(*, tenant: Tenant, direction: str, amount: Decimal, reason: str, user: object) -> LedgerEntry:
    """Credit or debit ``amount`` on ``tenant``'s available balance, with ``reason``.

    Raises:
        PermissionDenied: ``user`` is not staff.
        ValidationError: per field -- ``direction``, ``amount`` (not positive, too large,
            more than 4 decimal places, or a debit above the available balance), ``reason``
            (shorter than 5 or longer than 200 characters).
    """
    if not roles.is_staff(user):
        raise PermissionDenied("Only staff may credit or debit an account.")
    kind, reason = _clean(direction, amount, reason)
    memo = f"{direction} by {getattr(user, 'get_username', lambda: 'staff')()}: {reason}"[:REASON_MAX]
    try:
        return tenant_post(tenant_id=tenant.pk, kind=kind, amount=amount, memo=memo, user=user)
    except ValidationError as exc:
        # _post_many names the bid's field ("budget"); here it is the adjustment's amount.
        raise ValidationError({"amount": [m for msgs in exc.message_dict.values() for m in msgs]}) from None
