"""Money movements through the append-only ledger.

Every function locks the account row (callers hold locks in the order market,
then accounts by primary key) and writes ``LedgerEntry`` rows whose deltas are
applied to the account in the same transaction; the database constraints on
``Account`` reject a movement that would make a balance negative.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any, Protocol

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

from marketplace.infra import rows
from marketplace.infra.batch import Batch
from marketplace.ledger.models import Account, LedgerEntry


class Job(Protocol):
    """What the ledger reads and writes of a job (the core's ``market.models.jobs.Job``, passed in:
    the ledger imports nothing of the core): its id, its tenant, and the charge it has paid so far."""

    pk: Any
    tenant_id: int
    charged: Decimal


_DELTAS: dict[str, tuple[int, int]] = {
    LedgerEntry.Kind.DEPOSIT: (1, 0),
    LedgerEntry.Kind.HOLD: (-1, 1),
    LedgerEntry.Kind.CHARGE: (0, -1),
    LedgerEntry.Kind.RELEASE: (1, -1),
    LedgerEntry.Kind.CREDIT: (1, 0),
    LedgerEntry.Kind.DEBIT: (-1, 0),
}


def _post(*, account_id: int, kind: str, amount: Decimal, job: Job | None = None, memo: str = "", user: object = None) -> LedgerEntry:
    """Lock the account, apply ``amount`` with the signs of ``kind`` and append the entry
    (in a savepoint of its own: a refused movement leaves the caller's transaction usable).

    Raises:
        ValidationError: amount not positive, or not enough funds for the movement.
    """
    if amount <= 0:
        raise ValidationError({"amount": "The amount must be positive."})
    return _post_many(account_id=account_id, job=job, movements=[(kind, amount, memo)], user=user, savepoint=True)[0]


def account_deposit(*, account: Account, amount: Decimal, memo: str = "", user: object = None) -> LedgerEntry:
    """Credit ``amount`` to the account's available balance."""
    return _post(account_id=account.pk, kind=LedgerEntry.Kind.DEPOSIT, amount=amount, memo=memo, user=user)


def tenant_post(*, tenant_id: int, kind: str, amount: Decimal, memo: str, user: object) -> LedgerEntry:
    """One movement without a job on a tenant's account, in a savepoint of its own
    (``account_adjust``'s credits and debits)."""
    return _post_many(tenant_id=tenant_id, job=None, movements=[(kind, amount, memo)], user=user, savepoint=True)[0]


def job_hold(*, tenant_id: int, job: Job, amount: Decimal, user: object = None) -> None:
    """Hold a new bid's budget on its tenant's account, inside the bid's transaction
    (one account lock, no savepoint).

    Raises:
        ValidationError: {"budget": ...} when the available balance does not cover it.
    """
    _post_many(tenant_id=tenant_id, job=job, movements=[(LedgerEntry.Kind.HOLD, amount, f"hold for job {job.pk}")], user=user)


def job_release(*, job: Job, amount: Decimal, memo: str, user: object = None) -> None:
    """Return ``amount`` of the job's hold to its tenant's available balance, inside the caller's
    transaction (one account lock, no savepoint: a cancellation).

    Raises:
        ValidationError: more than is held would be released.
    """
    _post_many(tenant_id=job.tenant_id, job=job, movements=[(LedgerEntry.Kind.RELEASE, amount, memo)], user=user)


MONEY_QUANTUM = Decimal("0.0001")


def money(amount: float) -> Decimal:
    """A mechanism's float amount as ledger money (4 decimals; exact for budgets,
    which have at most 4)."""
    return Decimal(repr(float(amount))).quantize(MONEY_QUANTUM)


def job_settle(*, job: Job, amount: Decimal, memo: str = "", held: Decimal | None = None) -> Decimal:
    """Charge ``amount`` of the job's hold as its payment (the amount its payment
    rule decided; 0 charges nothing) and release the rest of the hold: one
    account lock, one or two entries. Adds the charge to ``job.charged`` (saved
    by the caller). Returns the amount charged.

    ``held``: what is held for the job, when the caller read it already in this transaction
    (``jobs_held_amounts``: one query for a tick's departures instead of one each).

    Raises:
        ValidationError: the amount exceeds what is held for the job (a
            mechanism must never charge more than the hold it placed).
    """
    held = _hold_covering(job, amount, held)
    movements = []
    if amount > 0:
        movements.append((LedgerEntry.Kind.CHARGE, amount, memo or f"charge for job {job.pk}"))
    if held - amount > 0:
        movements.append((LedgerEntry.Kind.RELEASE, held - amount, f"rest of the hold of job {job.pk}"))
    _post_many(tenant_id=job.tenant_id, job=job, movements=movements)
    job.charged += amount
    return amount


def jobs_settle(*, settlements: Sequence[tuple[Job, Decimal, str, Decimal]], batch: Batch | None = None) -> None:
    """:func:`job_settle` of several jobs at once, each as (job, amount, memo, held): the clock's
    departures of one tick. Each job's charge and release are the ones :func:`job_settle` writes,
    in the same order (entries chain per account in the order given), and each ``job.charged``
    grows by its amount.

    On PostgreSQL two statements whatever the number of jobs and tenants: every account moves by
    its tenant's sum in one guarded ``UPDATE ... FROM unnest(...) RETURNING`` (as
    :func:`_post_many`'s, one row per tenant), then every entry is appended in one INSERT (added to
    ``batch`` when given: nothing reads the entries before it runs). SQLite: :func:`_post_many` per tenant.

    Raises:
        ValidationError: an amount exceeds what is held for its job, or a movement would make
            a balance negative (the caller's transaction is then aborted, as with :func:`job_settle`).
    """
    by_tenant: dict[int, list[tuple[Any, str, Decimal, str]]] = {}
    for job, amount, memo, held in settlements:
        _hold_covering(job, amount, held)
        moves = by_tenant.setdefault(job.tenant_id, [])
        if amount > 0:
            moves.append((job.pk, LedgerEntry.Kind.CHARGE, amount, memo or f"charge for job {job.pk}"))
        if held - amount > 0:
            moves.append((job.pk, LedgerEntry.Kind.RELEASE, held - amount, f"rest of the hold of job {job.pk}"))
        job.charged += amount
    by_tenant = {tenant: moves for tenant, moves in by_tenant.items() if moves}
    if not by_tenant:
        return
    if connection.vendor != "postgresql" or len(by_tenant) == 1:
        for tenant_id, moves in by_tenant.items():
            _post_moves(tenant_id, moves, batch)
        return
    now = timezone.now()
    totals = {tenant: _totals(moves) for tenant, moves in by_tenant.items()}
    tenants = sorted(totals)  # rows in the accounts' lock order (tenant and account ids rise together)
    with connection.cursor() as cursor:
        cursor.execute(_apply_many_statement(), [
            tenants, _UPDATED.get_db_prep_save(now, connection), tenants,
            [_MONEY_FIELD.get_db_prep_save(totals[t][0], connection) for t in tenants],
            [_MONEY_FIELD.get_db_prep_save(totals[t][1], connection) for t in tenants],
        ])
        found = {int(tenant): (int(pk), available, held) for tenant, pk, available, held in cursor.fetchall()}
    entries = []
    for tenant_id, moves in by_tenant.items():
        if tenant_id not in found:
            raise _refusal("tenant_id", tenant_id, [(kind, amount, memo) for _, kind, amount, memo in moves])
        pk, available, held = found[tenant_id]
        entries += _chain(pk, rows.to_decimal(available, _PLACES), rows.to_decimal(held, _PLACES), moves, totals[tenant_id], now)
    rows.insert_rows(LedgerEntry, _ENTRY_FIELDS, entries, batch=batch)


def _totals(moves: Sequence[tuple[Any, str, Decimal, str]]) -> tuple[Decimal, Decimal]:
    """(sum of the available deltas, sum of the held deltas) of movements (job id, kind, amount, memo)."""
    deltas = [_deltas(kind, amount) for _, kind, amount, _ in moves]
    return sum((d[0] for d in deltas), Decimal(0)), sum((d[1] for d in deltas), Decimal(0))


def _chain(account_id: int, available: Decimal, held: Decimal, moves: Sequence[tuple[Any, str, Decimal, str]],
           totals: tuple[Decimal, Decimal], now: Any, by: Any = None) -> list[tuple[Any, ...]]:
    """The entries of ``moves`` (job id, kind, amount, memo), chained back from the balances after
    them (``available``, ``held``: what the guarded UPDATE returned) through their ``totals``.

    Raises:
        ValidationError: a movement would make a balance negative between two of them.
    """
    available -= totals[0]
    held -= totals[1]
    entries = []
    for job_id, kind, amount, memo in moves:
        d_avail, d_held = _deltas(kind, amount)
        _check(available, held, amount, d_avail, d_held)  # between movements (the sum's end is checked by the UPDATE)
        available += d_avail
        held += d_held
        entries.append((account_id, kind, amount, d_avail, d_held, available, held, job_id, memo, by, now))
    return entries


def _post_moves(tenant_id: int, moves: Sequence[tuple[Any, str, Decimal, str]], batch: Batch | None) -> None:
    """Movements of several jobs (job id, kind, amount, memo) on one tenant's account, under one
    account lock, as :func:`_post_many` writes them: one guarded UPDATE and one INSERT."""
    now = timezone.now()
    totals = _totals(moves)
    moved_available, moved_held = (_MONEY_FIELD.get_db_prep_save(d, connection) for d in totals)
    with connection.cursor() as cursor:
        cursor.execute(_apply_statement("tenant_id"), [moved_available, moved_held, _UPDATED.get_db_prep_save(now, connection),
                                                       tenant_id, moved_available, moved_held])
        found = cursor.fetchone()
    if found is None:
        raise _refusal("tenant_id", tenant_id, [(kind, amount, memo) for _, kind, amount, memo in moves])
    entries = _chain(int(found[0]), rows.to_decimal(found[1], _PLACES), rows.to_decimal(found[2], _PLACES), moves, totals, now)
    rows.insert_rows(LedgerEntry, _ENTRY_FIELDS, entries, batch=batch)


def job_charge(*, job: Job, amount: Decimal, memo: str = "") -> Decimal:
    """Charge ``amount`` of the job's hold now and keep the rest held (a price
    due at acceptance). Raises ValidationError like :func:`job_settle`."""
    _hold_covering(job, amount)
    if amount > 0:
        _post_many(tenant_id=job.tenant_id, job=job, movements=[(LedgerEntry.Kind.CHARGE, amount, memo)])
        job.charged += amount
    return amount


def tenant_movements(*, tenant_id: int, movements: list[tuple[str, Decimal, str]], user: object = None) -> list[LedgerEntry]:
    """Several movements without a core job on a tenant's account, under one account lock, inside the
    caller's transaction (no savepoint); movements of amount 0 are skipped. Returns the entries
    written, in order, so that a part links them to what it moved money for (in a table of its own).
    Raises ValidationError like :func:`job_hold`."""
    return _post_many(tenant_id=tenant_id, job=None, movements=[m for m in movements if m[1] > 0], user=user)


def _post_many(*, account_id: int | None = None, tenant_id: int | None = None, job: Job | None,
               movements: list[tuple[str, Decimal, str]], user: object = None, savepoint: bool = False) -> list[LedgerEntry]:
    """Several movements of one job under one account lock (entries chain in order);
    the account by its id or its tenant's.

    Two statements whatever the number of movements (``infra.rows``: this runs for every
    bid, cancellation and departure, while the market row is held): the account's balances
    move by the movements' sum in one ``UPDATE ... RETURNING`` that takes the row lock and
    refuses a negative result in its WHERE clause (rounded to the money's 4 places, which
    keeps SQLite's REAL arithmetic from drifting and changes nothing on PostgreSQL's
    numeric), then the entries are appended, chained back from the balances it returned. No
    savepoint by default: a bid and the clock's tick run in a transaction that a failed
    movement aborts whole anyway.

    Raises:
        ValidationError: a movement would make a balance negative.
        Account.DoesNotExist: no such account.
    """
    if not movements:
        return []
    key, value = ("id", account_id) if account_id is not None else ("tenant_id", tenant_id)
    deltas = [_deltas(kind, amount) for kind, amount, _ in movements]
    total_available, total_held = sum(d[0] for d in deltas), sum(d[1] for d in deltas)
    now = timezone.now()
    by = getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None
    job_id = job.pk if job is not None else None
    with transaction.atomic(savepoint=savepoint):
        moved_available, moved_held = (_MONEY_FIELD.get_db_prep_save(d, connection) for d in (total_available, total_held))
        with connection.cursor() as cursor:
            cursor.execute(_apply_statement(key), [moved_available, moved_held, _UPDATED.get_db_prep_save(now, connection), value,
                                                   moved_available, moved_held])
            found = cursor.fetchone()
        if found is None:
            raise _refusal(key, value, movements)
        pk = int(found[0])
        available = rows.to_decimal(found[1], _PLACES) - total_available  # the balances before, chained forward
        held = rows.to_decimal(found[2], _PLACES) - total_held
        entries = []
        for (kind, amount, memo), (d_avail, d_held) in zip(movements, deltas, strict=True):
            _check(available, held, amount, d_avail, d_held)  # between movements (the sum's end is checked above)
            available += d_avail
            held += d_held
            entries.append((pk, kind, amount, d_avail, d_held, available, held, job_id, memo, by, now))
        ids = rows.insert_rows(LedgerEntry, _ENTRY_FIELDS, entries, returning_pk=True)
    return [LedgerEntry(pk=entry_id, **dict(zip(_ENTRY_ATTRS, e, strict=True))) for entry_id, e in zip(ids, entries, strict=True)]


def _deltas(kind: str, amount: Decimal) -> tuple[Decimal, Decimal]:
    """(change of available, change of held) that a movement of ``kind`` and ``amount`` makes."""
    d_avail, d_held = _DELTAS[kind]
    return Decimal(d_avail) * amount, Decimal(d_held) * amount


def _check(available: Decimal, held: Decimal, amount: Decimal, d_avail: Decimal, d_held: Decimal) -> None:
    if available + d_avail < 0:
        raise ValidationError({"budget": f"Not enough funds: {available} available, {amount} needed."})
    if held + d_held < 0:
        raise ValidationError({"amount": f"Only {held} is held on this account."})


def _refusal(key: str, value: object, movements: list[tuple[str, Decimal, str]]) -> Exception:
    """Why the guarded UPDATE matched no row: no such account, or which movement would have
    made a balance negative (read again, unlocked: the answer names the balances it saw)."""
    account = Account.objects.filter(**{key: value}).values_list("available", "held").first()
    if account is None:
        return Account.DoesNotExist(f"no account with {key} = {value}")
    available, held = account
    for kind, amount, _ in movements:
        d_avail, d_held = _deltas(kind, amount)
        try:
            _check(available, held, amount, d_avail, d_held)
        except ValidationError as exc:
            return exc
        available, held = available + d_avail, held + d_held
    return ValidationError({"budget": f"Not enough funds: {account[0]} available."})  # the balance moved meanwhile


@lru_cache(maxsize=2)
def _apply_statement(key: str) -> str:
    """The guarded balance update of :func:`_post_many`, by account id or tenant id."""
    moved_available, moved_held = f"ROUND({_AVAILABLE} + %s, {_PLACES})", f"ROUND({_HELD} + %s, {_PLACES})"
    return (f"UPDATE {_ACCOUNTS} SET {_AVAILABLE} = {moved_available}, {_HELD} = {moved_held}, {rows.column(Account, 'updated_at')} = %s"
            f" WHERE {rows.column(Account, key)} = %s AND {moved_available} >= 0 AND {moved_held} >= 0"
            f" RETURNING id, {_AVAILABLE}, {_HELD}")


@lru_cache(maxsize=1)
def _apply_many_statement() -> str:
    """:func:`jobs_settle`'s balance update (PostgreSQL): every tenant's account by its sums, each
    row guarded as :func:`_apply_statement`'s, the rows locked in the accounts' id order first."""
    account = rows.column(Account, "id")
    tenant = rows.column(Account, "tenant_id")
    money_type = _MONEY_FIELD.db_type(connection)
    moved_available, moved_held = f"ROUND(a.{_AVAILABLE} + v.da, {_PLACES})", f"ROUND(a.{_HELD} + v.dh, {_PLACES})"
    return (f"WITH locked AS (SELECT {account} FROM {_ACCOUNTS} WHERE {tenant} = ANY(%s::bigint[]) ORDER BY {account} FOR NO KEY UPDATE)"
            f" UPDATE {_ACCOUNTS} AS a SET {_AVAILABLE} = {moved_available}, {_HELD} = {moved_held},"
            f" {rows.column(Account, 'updated_at')} = %s"
            f" FROM unnest(%s::bigint[], %s::{money_type}[], %s::{money_type}[]) AS v(tenant, da, dh)"
            f" WHERE a.{tenant} = v.tenant AND a.{account} IN (SELECT {account} FROM locked)"
            f" AND {moved_available} >= 0 AND {moved_held} >= 0"
            f" RETURNING a.{tenant}, a.{account}, a.{_AVAILABLE}, a.{_HELD}")


_ENTRY_FIELDS = ("account", "kind", "amount", "available_delta", "held_delta", "available_after", "held_after",
                 "job", "memo", "created_by", "created_at")
_ENTRY_ATTRS = ("account_id", "kind", "amount", "available_delta", "held_delta", "available_after", "held_after",
                "job_id", "memo", "created_by_id", "created_at")
_ACCOUNTS = rows.table(Account)
_AVAILABLE = rows.column(Account, "available")
_HELD = rows.column(Account, "held")
_MONEY_FIELD = Account._meta.get_field("available")
_UPDATED = Account._meta.get_field("updated_at")
_PLACES = 4  # MONEY's decimal_places


def _hold_covering(job: Job, amount: Decimal, held: Decimal | None = None) -> Decimal:
    """What is held for ``job`` (``held`` when known); ValidationError if it does not cover ``amount``."""
    held = job_held_amount(job=job) if held is None else held
    if amount > held:
        raise ValidationError({"amount": f"job {job.pk}: a charge of {amount} exceeds its hold of {held}"})
    return held


def job_held_amount(*, job: Job) -> Decimal:
    """What is still held for ``job``: its holds minus its charges and releases (one
    SUM over the job's entries, on every settlement; SQLite's float sum is exact
    after quantising for amounts of this size)."""
    return jobs_held_amounts(job_ids=[job.pk])[job.pk]


def jobs_held_amounts(*, job_ids: list[int]) -> dict[int, Decimal]:
    """:func:`job_held_amount` of several jobs in one query (0 for a job without entries)."""
    if not job_ids:
        return {}
    out = dict.fromkeys(job_ids, Decimal("0").quantize(MONEY_QUANTUM))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_ENTRY_JOB}, COALESCE(SUM({_HELD_DELTA}), 0) FROM {_ENTRIES} WHERE {_ENTRY_JOB} IN "
                       f"({', '.join(['%s'] * len(job_ids))}) GROUP BY {_ENTRY_JOB}", list(job_ids))
        for job_id, held in cursor.fetchall():
            out[int(job_id)] = rows.to_decimal(held, _PLACES)
    return out


_ENTRIES = rows.table(LedgerEntry)
_HELD_DELTA = rows.column(LedgerEntry, "held_delta")
_ENTRY_JOB = rows.column(LedgerEntry, "job")


def ledger_reconcile(*, account: Account) -> list[str]:
    """Check that the account equals the sum of its entries and that each entry chains.

    Returns a list of discrepancies (empty when the ledger reconciles). The entries are read as
    rows of the five columns compared, in one statement (an audit of a long ledger builds no
    model instance per entry); the account is refreshed from the database.
    """
    problems: list[str] = []
    avail = held = Decimal("0")
    with connection.cursor() as cursor:
        cursor.execute(_LEDGER_CHAIN, [account.pk])
        chain = cursor.fetchall()
    for pk, available_delta, held_delta, available_after, held_after in chain:
        avail += rows.to_decimal(available_delta, _PLACES)
        held += rows.to_decimal(held_delta, _PLACES)
        recorded = (rows.to_decimal(available_after, _PLACES), rows.to_decimal(held_after, _PLACES))
        if (avail, held) != recorded:
            problems.append(f"entry {pk}: running sums {avail}/{held} != recorded {recorded[0]}/{recorded[1]}")
    account.refresh_from_db()
    if (avail, held) != (account.available, account.held):
        problems.append(f"account {account.pk}: {account.available}/{account.held} != ledger {avail}/{held}")
    return problems


_LEDGER_CHAIN = (f"SELECT {rows.column(LedgerEntry, 'id')}, {rows.column(LedgerEntry, 'available_delta')}, {_HELD_DELTA}, "
                 f"{rows.column(LedgerEntry, 'available_after')}, {rows.column(LedgerEntry, 'held_after')} FROM {_ENTRIES} "
                 f"WHERE {rows.column(LedgerEntry, 'account')} = %s ORDER BY {rows.column(LedgerEntry, 'id')}")


MAX_ADJUSTMENT = Decimal("1000000000")  # as a bid's budget (auction.services.MAX_BUDGET)


PLACES = 4  # the ledger's decimal places (ledger.models.MONEY)


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


def account_adjust(*, tenant: Model, direction: str, amount: Decimal, reason: str, user: object) -> LedgerEntry:
    """Credit or debit ``amount`` on ``tenant``'s available balance, with ``reason``.

    Raises:
        PermissionDenied: ``user`` is not staff.
        ValidationError: per field -- ``direction``, ``amount`` (not positive, too large,
            more than 4 decimal places, or a debit above the available balance), ``reason``
            (shorter than 5 or longer than 200 characters).
    """
    # the core's rule (market.roles.is_staff), read off the user: the ledger imports no core
    if not (user and getattr(user, "is_authenticated", False) and getattr(user, "is_staff", False)):
        raise PermissionDenied("Only staff may credit or debit an account.")
    kind, reason = _clean(direction, amount, reason)
    memo = f"{direction} by {getattr(user, 'get_username', lambda: 'staff')()}: {reason}"[:REASON_MAX]
    try:
        return tenant_post(tenant_id=tenant.pk, kind=kind, amount=amount, memo=memo, user=user)
    except ValidationError as exc:
        # _post_many names the bid's field ("budget"); here it is the adjustment's amount.
        raise ValidationError({"amount": [m for msgs in exc.message_dict.values() for m in msgs]}) from None
