"""Ledger service: holds, charges, releases, reconciliation, append-only rows."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.ledger.models import Account, LedgerEntry
from marketplace.ledger.services import account_deposit, job_charge, job_held_amount, job_release, ledger_reconcile

WORK = [WorkItem("map", 4, 10.0, 1.0)]


def test_hold_then_charge_reconciles(alice):
    # given a tenant with 1000 available
    # when a bid of 120 is placed and its job is charged 100 and released 20
    job = bid_submit(tenant=alice, budget="120", work=WORK)
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("880"), Decimal("120"))
    job_charge(job=job, amount=Decimal("100"), memo=f"charge for job {job.pk}")
    job_release(job=job, amount=Decimal("20"), memo=f"release for job {job.pk}")
    # then nothing is held, 100 is gone, and the ledger sums to the account
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("900"), Decimal("0"))
    assert job_held_amount(job=job) == 0
    assert ledger_reconcile(account=alice.account) == []


def test_charge_above_hold_is_refused_and_writes_nothing(alice):
    job = bid_submit(tenant=alice, budget="50", work=WORK)
    before = LedgerEntry.objects.count()
    with pytest.raises(ValidationError):
        job_charge(job=job, amount=Decimal("50.0001"), memo="too much")
    assert LedgerEntry.objects.count() == before
    assert ledger_reconcile(account=alice.account) == []


@pytest.mark.parametrize("amount", [Decimal("0"), Decimal("-5")])
def test_deposit_must_be_positive(alice, amount):
    with pytest.raises(ValidationError):
        account_deposit(account=alice.account, amount=amount)


def test_entries_are_append_only(alice):
    entry = LedgerEntry.objects.filter(account=alice.account).first()
    entry.memo = "rewritten"
    with pytest.raises(ValueError):
        entry.save()
    with pytest.raises(ValueError):
        entry.delete()


def test_database_refuses_negative_balance(alice):
    # The constraint is the last line of defence behind the service's own check.
    with pytest.raises(IntegrityError), transaction.atomic():
        Account.objects.filter(pk=alice.account.pk).update(available=Decimal("-1"))


def test_reconcile_detects_tampering(alice):
    Account.objects.filter(pk=alice.account.pk).update(available=Decimal("999"))
    assert ledger_reconcile(account=alice.account) != []


def test_settling_jobs_of_two_tenants_together_writes_what_one_at_a_time_writes(alice, bob):
    """``jobs_settle`` (a tick's departures: PostgreSQL moves every account in one statement) leaves
    the same balances and entries, per job and in order, as ``job_settle`` job by job, and refuses a
    charge above a job's hold before it writes anything."""
    from marketplace.ledger.services import job_settle, jobs_held_amounts, jobs_settle

    def departures() -> list:
        return [bid_submit(tenant=t, budget=b, work=WORK) for t, b in ((alice, "30"), (bob, "40"), (alice, "50"), (bob, "10"))]

    def balances() -> list:
        return list(Account.objects.filter(pk__in=[alice.account.pk, bob.account.pk]).order_by("pk").values_list("available", "held"))

    def entries(jobs: list) -> list:
        return [list(LedgerEntry.objects.filter(job=j).order_by("id").values_list("kind", "amount", "memo")) for j in jobs]

    charges = [Decimal("12.5"), Decimal("0"), Decimal("50"), Decimal("3.0001")]
    one_by_one, together = departures(), departures()
    start = balances()
    for job, amount in zip(one_by_one, charges, strict=True):
        job_settle(job=job, amount=amount, memo=f"charge for job {job.pk}")
    middle = balances()
    held = jobs_held_amounts(job_ids=[j.pk for j in together])
    jobs_settle(settlements=[(j, a, f"charge for job {j.pk}", held[j.pk]) for j, a in zip(together, charges, strict=True)])
    assert [j.charged for j in together] == [j.charged for j in one_by_one] == charges
    moved = [(m[0] - s[0], m[1] - s[1]) for s, m in zip(start, middle, strict=True)]
    assert [(e[0] - m[0], e[1] - m[1]) for m, e in zip(middle, balances(), strict=True)] == moved
    strip = [[(kind, amount, memo.replace(str(a.pk), "#")) for kind, amount, memo in rows]
             for a, rows in zip(one_by_one, entries(one_by_one), strict=True)]
    assert [[(kind, amount, memo.replace(str(b.pk), "#")) for kind, amount, memo in rows]
            for b, rows in zip(together, entries(together), strict=True)] == strip
    assert all(ledger_reconcile(account=t.account) == [] for t in (alice, bob))
    # a charge above the hold: refused, nothing written
    late = departures()[:2]
    before = (balances(), LedgerEntry.objects.count())
    with pytest.raises(ValidationError), transaction.atomic():
        jobs_settle(settlements=[(late[0], Decimal("1"), "", Decimal("30")), (late[1], Decimal("41"), "", Decimal("40"))])
    assert (balances(), LedgerEntry.objects.count()) == before
