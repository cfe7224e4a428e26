"""A replayed trace's jobs fall into a few job classes derived from the trace
(``simulator.workloads.traces.job_class``: the shape and size of the job), so each tenant's
classes gather finished jobs and the utility fits page shows fits (each job was its own class)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from marketplace.auction.selectors import utility_fits
from marketplace.market.models.jobs import Job
from marketplace.market.models.tenants import Tenant
from simulator.whatif.run import FB2009
from simulator.workloads.traces import TraceJob, job_class


@pytest.mark.parametrize(("tasks", "expected"), [
    ((1, 0), "map-only, 1 map"), ((7, 0), "map-only, 2-10 maps"), ((40, 3), "map+reduce, 11-100 maps"),
    ((900, 20), "map+reduce, over 100 maps"), ((16,), "9-16 processors"), ((17,), "17-32 processors"), ((1,), "1 processor"),
])
def test_a_jobs_class_is_its_shape_and_size(tasks, expected):
    job = TraceJob(1, 0.0, "u0", "g0", tasks, tuple(10.0 for _ in tasks))
    assert job_class(job) == f"trace: {expected}"


@pytest.mark.django_db(transaction=True)
def test_replayed_jobs_share_classes_and_the_fits_page_shows_fits(market):
    # the replay makes its two tenants (with deposits that cover every budget)
    call_command("replay_trace", str(FB2009), "--hours", "1", "--tenants", "2", "--drain", stdout=StringIO())
    jobs = Job.objects.exclude(external_id="")
    assert jobs.count() > 20
    classes = set(jobs.values_list("job_class", flat=True))
    assert 1 < len(classes) <= 8 and all(c.startswith("trace: ") for c in classes)
    tenant = Tenant.objects.get(name="tenant1")
    fitted = [c for c in utility_fits(tenant=tenant) if c.fit is not None]
    assert fitted, [(c.job_class, c.jobs) for c in utility_fits(tenant=tenant)]
    client = Client()
    client.force_login(tenant.user)
    page = client.get("/utility/").content.decode()
    assert "fit against measurement" in page
