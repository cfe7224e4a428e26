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
