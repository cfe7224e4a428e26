"""The share history's rows (``ShareSample``): a foreign key to the job without a database constraint.

The model's docstring gives the reason (a locking look-up per row at commit) and the two facts that make
the constraint unnecessary; these tests hold them: the clock writes rows only for jobs that exist, and a job
that has any (it has ledger entries) is never deleted, nor is its market."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.db.models import ProtectedError

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.market.models.allocation import ShareSample
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.selectors import share_points
from marketplace.market.services.clock import cluster_advance


def _history(market, alice, bob, capture) -> list[Job]:  # type: ignore[no-untyped-def]
    with capture(execute=True):
        jobs = [bid_submit(tenant=(alice, bob)[k % 2], budget="20", work=[WorkItem("map", 1 + k % 3, 30.0 + 20.0 * k)])
                for k in range(6)]
    with capture(execute=True):
        cluster_advance(market_id=market.pk, until=90.0)  # past a fairness sample, before most departures
        cluster_advance(market_id=market.pk, until=400.0)  # every job departs
    return jobs


def test_the_clock_writes_history_only_for_its_market_s_existing_jobs(market, alice, bob, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    jobs = _history(market, alice, bob, django_capture_on_commit_callbacks)
    written = ShareSample.objects.filter(job__in=jobs)
    assert written.count() > len(jobs)  # a sample of each present job, and one at each departure
    assert set(written.values_list("job_id", flat=True)) == {j.pk for j in jobs}
    assert not ShareSample.objects.exclude(job_id__in=Job.objects.values("id")).exists()  # no orphan
    assert set(ShareSample.objects.values_list("job__market_id", flat=True)) == {market.pk}
    points = share_points(market=market, job_ids=[jobs[0].pk])
    assert points and all(p["job_id"] == jobs[0].pk for p in points)


def test_a_job_with_history_is_never_deleted_so_its_rows_never_dangle(market, alice, bob, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    jobs = _history(market, alice, bob, django_capture_on_commit_callbacks)
    before = ShareSample.objects.count()
    for doomed in (Job.objects.get(pk=jobs[0].pk), Market.objects.get(pk=market.pk)):
        with pytest.raises(ProtectedError), transaction.atomic():  # the append-only ledger's entries protect the job
            doomed.delete()
    assert ShareSample.objects.count() == before
    assert not ShareSample.objects.exclude(job_id__in=Job.objects.values("id")).exists()


def test_the_history_table_carries_no_constraint_and_no_market_column(db) -> None:  # type: ignore[no-untyped-def]
    with connection.cursor() as cursor:
        columns = {c.name for c in connection.introspection.get_table_description(cursor, ShareSample._meta.db_table)}
        constraints = connection.introspection.get_constraints(cursor, ShareSample._meta.db_table)
    assert columns == {"id", "job_id", "sim_time", "shares"}
    assert not [name for name, c in constraints.items() if c["foreign_key"]]
