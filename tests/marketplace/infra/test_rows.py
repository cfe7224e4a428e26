"""infra.rows stores and reads exactly what the ORM would (the clock's hot path uses it)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import transaction

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.infra import instances, rows
from marketplace.infra.batch import Batch
from marketplace.ledger.models import LedgerEntry
from marketplace.market.models.allocation import ShareSample
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market


def _fields(obj: object, model: type, skip: tuple[str, ...] = ()) -> dict[str, object]:
    return {f.attname: getattr(obj, f.attname) for f in model._meta.concrete_fields if f.name not in skip}  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_get_row_and_get_many_equal_the_orm_value_for_value(market, alice):
    job = bid_submit(tenant=alice, budget="12.3456", work=[WorkItem("map", 3, 5.5)])
    with transaction.atomic():
        ours = instances.get_row(Market, market.pk, exclude=("engine_state",), for_update=True)
    theirs = Market.objects.defer("engine_state").get(pk=market.pk)
    assert _fields(ours, Market, ("engine_state",)) == _fields(theirs, Market, ("engine_state",))
    assert ours.get_deferred_fields() == {"engine_state"} and not ours._state.adding
    [light] = instances.get_many(Job, [job.pk], only=("id", "status", "charged", "tenant_id", "budget", "submitted_at"))
    full = Job.objects.get(pk=job.pk)
    for name in ("id", "status", "charged", "tenant_id", "budget", "submitted_at"):
        assert getattr(light, name) == getattr(full, name)
        assert type(getattr(light, name)) is type(getattr(full, name))
    assert light.budget == Decimal("12.3456")
    with pytest.raises(Market.DoesNotExist):
        instances.get_row(Market, 10**9)


@pytest.mark.django_db
def test_increment_row_adds_one_and_returns_the_row_as_the_orm_reads_it_then(market):
    before = Market.objects.get(pk=market.pk).state_version
    with transaction.atomic():
        ours = instances.increment_row(Market, market.pk, counter="state_version", exclude=("engine_state",))
        ours_again = instances.increment_row(Market, market.pk, counter="state_version", exclude=("engine_state",))
    theirs = Market.objects.defer("engine_state").get(pk=market.pk)
    assert (ours.state_version, ours_again.state_version, theirs.state_version) == (before + 1, before + 2, before + 2)
    assert _fields(ours_again, Market, ("engine_state",)) == _fields(theirs, Market, ("engine_state",))
    assert ours.get_deferred_fields() == {"engine_state"} and not ours._state.adding
    with pytest.raises(Market.DoesNotExist):
        instances.increment_row(Market, 10**9, counter="state_version")


@pytest.mark.django_db
def test_insert_and_update_rows_store_what_the_orm_reads_back(market, alice):
    job = bid_submit(tenant=alice, budget="5", work=[WorkItem("map", 1, 1.0)])
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    [pk] = rows.insert_rows(ShareSample, ("job", "sim_time", "shares"), [(job.pk, 1.5, [0.25, 1.0])],
                            returning_pk=True)
    assert ShareSample.objects.get(pk=pk).shares == [0.25, 1.0]
    account = alice.account
    [entry_pk] = rows.insert_rows(LedgerEntry, ("account", "kind", "amount", "available_delta", "held_delta", "available_after",
                                                "held_after", "job", "memo", "created_by", "created_at"),
                                  [(account.pk, "deposit", Decimal("0.0001"), Decimal("0.0001"), Decimal("0"), Decimal("99999999.9999"),
                                    Decimal("0"), None, "ünïcode", None, when)], returning_pk=True)
    entry = LedgerEntry.objects.get(pk=entry_pk)
    assert (entry.amount, entry.available_after, entry.memo, entry.created_at, entry.job_id) == (
        Decimal("0.0001"), Decimal("99999999.9999"), "ünïcode", when, None)
    rows.update_rows(Job, ("status", "charged", "sim_start_time"), ("id",), [(Job.Status.RUNNING, Decimal("1.5"), 7.25, job.pk)])
    job.refresh_from_db()
    assert (job.status, job.charged, job.sim_start_time) == ("running", Decimal("1.5"), 7.25)
    # a row whose keys match nothing changes nothing
    rows.update_rows(Job, ("status",), ("id", "status"), [(Job.Status.FINISHED, job.pk, Job.Status.QUEUED)])
    job.refresh_from_db()
    assert job.status == "running"
    assert rows.ids_where(Job, equal={"market": market.pk}, within=("status", Job.ACTIVE)) == {job.pk}
    assert rows.to_decimal(0.1 + 0.2, 4) == Decimal("0.3000")


@pytest.mark.django_db
def test_insert_instances_stores_what_save_would(market, alice):
    """Two unsaved jobs alike but for the name: one through save(), one through insert_instances;
    read back, every column but the id, the name and the creation time is equal."""
    from marketplace.ledger.models import IdempotencyKey

    kwargs = {"market": market, "tenant": alice, "queue_id": alice.default_queue_id, "budget": Decimal("7.2500"), "utility": "log",
              "sim_submit_time": 12.5, "min_utility": 0.3, "job_class": "etl"}
    saved = Job(name="saved", **kwargs)
    saved.save()
    ours = Job(name="ours", **kwargs)
    rows.insert_instances([ours])
    assert ours.pk and not ours._state.adding and ours.submitted_at is not None  # auto_now_add applied
    skip = ("id", "name", "submitted_at")
    assert _fields(Job.objects.get(pk=ours.pk), Job, skip) == _fields(Job.objects.get(pk=saved.pk), Job, skip)
    assert Job.objects.get(pk=ours.pk).name == "ours"
    key = IdempotencyKey(user=alice.user, key="k1", fingerprint="f" * 64, status_code=0, response="",
                         created_at=datetime(2026, 1, 2, tzinfo=UTC))
    rows.insert_instances([key])
    found = instances.find_row(IdempotencyKey, user=alice.user.pk, key="k1")
    assert _fields(found, IdempotencyKey) == _fields(IdempotencyKey.objects.get(pk=key.pk), IdempotencyKey)
    assert instances.find_row(IdempotencyKey, user=alice.user.pk, key="k2") is None


@pytest.mark.parametrize("name", ["Market", "Job", "ResourceType", "Queue", "Tenant", "Account"])
def test_row_locks_on_rows_others_reference_are_no_key(name):
    """infra.locking: select_for_update on these models takes FOR NO KEY UPDATE, so inserts that
    reference a locked row (a job its market) are not held up, and no FOR UPDATE waiter can
    deadlock with a transaction that references the row and then locks it."""
    import marketplace.models as m

    model = getattr(m, name)
    assert model.objects.select_for_update().query.select_for_no_key_update
    assert not model.objects.select_for_update(no_key=False).query.select_for_no_key_update  # still possible on purpose


@pytest.mark.django_db
def test_update_and_insert_rows_of_many_rows_store_what_one_row_at_a_time_stores(market, alice):
    """Many rows at once (PostgreSQL: one ``UPDATE ... FROM unnest(...)`` and one ``INSERT ... SELECT * FROM unnest(...)``;
    SQLite: executemany) leave the tables as the same rows written one statement each would,
    for every column type the clock writes (text, float, Decimal, datetime, JSON, null), also
    past a thousand rows, with ints in float and decimal columns; a key given twice keeps the last row, as statement by statement."""
    from marketplace.market.models.jobs import JobWork

    jobs = [bid_submit(tenant=alice, budget="5", work=[WorkItem("map", 2, 1.0)]) for _ in range(6)]
    bulk, single = jobs[:3], jobs[3:]
    when = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)

    def values(k: int, job: Job) -> tuple:
        charged = k if k == 0 else Decimal(f"{k}.1234")  # an int among Decimals, a float column's int among floats
        return (Job.Status.FINISHED, charged, k if k == 2 else 1.5 * k, None if k == 1 else when, {"map": 0.25 * k}, job.pk)

    names = ("status", "charged", "sim_finish_time", "finished_at", "average_shares")
    rows.update_rows(Job, names, ("id",), [values(k, job) for k, job in enumerate(bulk)])
    for k, job in enumerate(single):
        rows.update_rows(Job, names, ("id",), [values(k, job)])
    read = {j.pk: j for j in Job.objects.filter(pk__in=[j.pk for j in jobs])}
    for a, b in zip(bulk, single, strict=True):
        assert _fields(read[a.pk], Job, ("id", "name", "submitted_at")) == _fields(read[b.pk], Job, ("id", "name", "submitted_at"))
    # two keys: (job, resource type); the job given twice keeps its last row
    work = {w.job_id: w for w in JobWork.objects.filter(job__in=bulk)}
    rt = work[bulk[0].pk].resource_type_id
    rows.update_rows(JobWork, ("pending", "running", "done"), ("job", "resource_type"),
                     [(0, 1, 1, bulk[0].pk, rt), (1, 1, 0, bulk[1].pk, rt), (0, 0, 2, bulk[0].pk, rt)])
    assert {w.job_id: (w.pending, w.running, w.done) for w in JobWork.objects.filter(job__in=bulk[:2])} == {
        bulk[0].pk: (0, 0, 2), bulk[1].pk: (1, 1, 0)}
    many = [(bulk[0].pk, t if t % 2 else float(t), [t / 7, 1.0]) for t in range(1_003)]
    rows.insert_rows(ShareSample, ("job", "sim_time", "shares"), many)
    stored = ShareSample.objects.filter(job=bulk[0]).order_by("sim_time").values_list("job_id", "sim_time", "shares")
    assert [tuple(r) for r in stored] == [tuple(r) for r in many]


@pytest.mark.django_db
def test_a_batch_leaves_the_tables_as_its_writes_one_by_one_do(market, alice, django_assert_num_queries):
    """``Batch``: writes of different rows added to a batch (PostgreSQL: held back, then one
    ``WITH ... `` statement) leave the tables as the same writes run one by one; a JSON null
    among many rows is stored as SQL null, as one row alone stores it."""
    from django.db import connection

    from marketplace.market.models.market import EngineJob

    jobs = [bid_submit(tenant=alice, budget="5", work=[WorkItem("map", 2, 1.0)]) for _ in range(6)]
    for k, job in enumerate(jobs[:2]):
        EngineJob.objects.create(market=market, job_id=job.pk, state={"k": k})

    def write(batch: Batch | None, pair: list[Job], other: Job) -> None:
        rows.update_rows(Job, ("status", "average_shares"), ("id",),
                         [(Job.Status.FINISHED, None, pair[0].pk), (Job.Status.FINISHED, {"map": 0.5}, pair[1].pk)], batch=batch)
        rows.insert_rows(ShareSample, ("job", "sim_time", "shares"),
                         [(pair[0].pk, float(t), [t, 0.5]) for t in range(3)], batch=batch)
        rows.delete_where(EngineJob, equal={"market": market.pk}, within=("job_id", [other.pk]), batch=batch)
        rows.upsert_documents(EngineJob, fixed={"market": market.pk}, key="job_id", document="state",
                              rows=[(pair[0].pk, {"at": 2.5})], batch=batch)

    write(None, jobs[2:4], jobs[0])
    batch = Batch()
    with django_assert_num_queries(0 if batch.deferring else 4):  # SQLite: at once
        write(batch, jobs[4:6], jobs[1])
    assert batch.deferring == (connection.vendor == "postgresql") and len(batch) == (4 if batch.deferring else 0)
    with django_assert_num_queries(1 if batch.deferring else 0):
        batch.run()
    assert len(batch) == 0
    read = {j.pk: j for j in Job.objects.filter(pk__in=[j.pk for j in jobs[2:]])}
    assert [(read[j.pk].status, read[j.pk].average_shares) for j in jobs[2:]] == [
        (Job.Status.FINISHED, None), (Job.Status.FINISHED, {"map": 0.5})] * 2
    for job in (jobs[2], jobs[4]):
        assert list(ShareSample.objects.filter(job=job).order_by("sim_time").values_list("sim_time", "shares")) == [
            (0.0, [0, 0.5]), (1.0, [1, 0.5]), (2.0, [2, 0.5])]
        assert EngineJob.objects.get(market=market, job_id=job.pk).state == {"at": 2.5}
    assert not EngineJob.objects.filter(market=market, job_id__in=[jobs[0].pk, jobs[1].pk]).exists()
    assert Job.objects.filter(pk__in=[j.pk for j in jobs[2:]], average_shares__isnull=True).count() == 2  # SQL null, not JSON null
