"""The ledger's reads: a tenant's account and entries, a job's entries and money (no writes here).

A tenant or a job is passed as the core's model instance (``market.models``) or its id: the
ledger filters on the foreign key and imports nothing of the core.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from django.db import connection
from django.db.models import Model, QuerySet

from marketplace.infra import instances, rows
from marketplace.infra.resilience import cache_get, cache_set
from marketplace.ledger.models import Account, LedgerEntry


def tenant_ledger(*, tenant: Model) -> QuerySet[LedgerEntry]:
    """A tenant's ledger entries, newest first. Readers show an entry's job by its id: the job's
    row is not joined (at a million entries that join read the jobs table whole for a far page)."""
    account = Account.objects.filter(tenant=tenant).values_list("id", flat=True).first()
    # by the account's id, not a join on the tenant: the planner then knows how many rows the
    # account has (a small account reads its own index range, not the newest of everyone's)
    return LedgerEntry.objects.filter(account_id=account).order_by("-id")


ENTRY_COUNT_CACHE_S = 86400.0  # wall seconds an account's counted prefix is kept


def entry_count(*, account_id: int) -> int:
    """How many entries the account has, without counting them all on every page: the count up
    to an entry id is kept in the cache and later reads count only the entries after it (one range
    of the ``(account, -id)`` index). Sound because an account's entries are written under its row
    lock, taken before their ids are drawn (``ledger.services``): an entry committed after another
    of the same account has a larger id, so none appears below an id already counted. The key
    holds the account's first entry (its id and time), so an account id reused after the tables
    were emptied never meets an old count."""
    entries = LedgerEntry.objects.filter(account_id=account_id)
    first = entries.order_by("id").values_list("id", "created_at").first()
    if first is None:
        return 0
    key = f"entry-count:{account_id}:{first[0]}:{first[1].timestamp():.6f}"
    kept = cache_get(key)
    upto, counted = kept if isinstance(kept, tuple) else (0, 0)
    newest = entries.order_by("-id").values_list("id", flat=True).first() or upto
    if newest > upto:
        counted += entries.filter(id__gt=upto, id__lte=newest).count()
        cache_set(key, (newest, counted), ENTRY_COUNT_CACHE_S)
    return counted


def job_money(*, job_ids: list[int]) -> dict[int, tuple[Decimal, Decimal]]:
    """job id -> (amount held now, amount charged), from the ledger."""
    held: defaultdict[int, Decimal] = defaultdict(Decimal)
    charged: defaultdict[int, Decimal] = defaultdict(Decimal)
    for job_id, kind, amount, held_delta in _job_entries(job_ids):
        held[job_id] += held_delta
        if kind == LedgerEntry.Kind.CHARGE:
            charged[job_id] += amount
    return {j: (held[j], charged[j]) for j in job_ids}


def _job_entries(job_ids: list[int]) -> list[tuple[int, str, Decimal, Decimal]]:
    """(job id, kind, amount, held_delta) of the ledger entries of ``job_ids``, in one plain statement
    (the ORM's ``job_id__in`` prepares every id through the foreign key and compiles the query anew on
    every page of jobs: more than the statement costs); the amounts as the ORM reads them."""
    if not job_ids:
        return []
    amount = LedgerEntry._meta.get_field("amount")
    places = int(amount.decimal_places)  # type: ignore[attr-defined]
    where, params = rows.any_of(rows.column(LedgerEntry, "job"), job_ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {rows.column(LedgerEntry, 'job')}, {rows.column(LedgerEntry, 'kind')}, "
                       f"{rows.column(LedgerEntry, 'amount')}, {rows.column(LedgerEntry, 'held_delta')} "
                       f"FROM {rows.table(LedgerEntry)} WHERE {where}", params)
        found = cursor.fetchall()
    # PostgreSQL's numeric arrives as the Decimal the ORM would give (no converter); SQLite's as a float
    return [(j, k, a if type(a) is Decimal else rows.to_decimal(a, places), h if type(h) is Decimal else rows.to_decimal(h, places))
            for j, k, a, h in found]


def account_of(*, tenant: Model) -> Account:
    """The tenant's account (Account.DoesNotExist if it has none), from a statement built once
    (``infra.instances.find_row``: the account is read on every balance poll)."""
    account = instances.find_row(Account, tenant=tenant.pk)
    if account is None:
        raise Account.DoesNotExist("Account matching query does not exist.")
    return account  # type: ignore[no-any-return]


def job_ledger(*, job: Model) -> QuerySet[LedgerEntry]:
    """A job's ledger entries (hold, charge, release), oldest first."""
    return LedgerEntry.objects.filter(job=job).order_by("id")
