"""Pages for Abacus's tenant extras (paper 000, Secs. 5-6): utility fits and the price preview.

Thin views: reads through ``auction.selectors``, writes through ``auction.services.utility_fit_adopt``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from marketplace.auction import preview as bid_preview
from marketplace.auction.admission import PreviewBusy
from marketplace.auction.charts import utility_fit_figure
from marketplace.auction.forms import BidForm, JobFilterForm
from marketplace.auction.selectors import job_rows, slo_status, utility_fits
from marketplace.auction.services import bid_submit, cancellation_preview, job_cancel, utility_fit_adopt
from marketplace.fairshare.selectors import job_waiting
from marketplace.ledger.idempotency import form_submit_once
from marketplace.ledger.money import format_money
from marketplace.ledger.selectors import account_of, job_ledger
from marketplace.market import hooks, selectors, visibility
from marketplace.market.models.jobs import Job
from marketplace.market.models.tenants import Tenant
from marketplace.web.charts import job_share_figure
from marketplace.web.http_cache import poller_revalidates
from marketplace.web.shortcuts import MAX_POINTS, blank, csv_response, paginate, render_page, tenant_required
from marketplace.web.text import chart_text

PART_JOBS = 5  # the newest jobs of each other part (Cura's) on My jobs


def _fit_rows(tenant: Tenant) -> list[dict[str, Any]]:
    rows = []
    for n, c in enumerate(utility_fits(tenant=tenant)):
        fit = c.fit
        row: dict[str, Any] = {"c": c, "figure": None, "weights": [], "fid": f"fit-figure-{n}"}
        if fit is not None:
            row["weights"] = [
                {"type": t, "w": float(fit.weights[k]), "share": float(fit.normalised[k]), "spread": float(fit.spread[k]),
                 "adopted": None if c.adopted is None else c.adopted.get(t)}
                for k, t in enumerate(c.types)
            ]
            row["figure"] = utility_fit_figure(
                c.points, fit.weights.tolist(), fit.intercept, kind=fit.kind,
                title=f"Class {chart_text(c.job_class)}: fit against measurement")
        rows.append(row)
    return rows


@tenant_required
@require_GET
def utility_fits_view(request: HttpRequest) -> HttpResponse:
    """The tenant's job classes with their fitted utility weights (paper 000, Sec. 5)."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    rows = _fit_rows(tenant)
    return render_page(request, "auction/utility_fits.html", {
        "nav": "utility", "tenant": tenant, "rows": rows, "waiting": [r["c"] for r in rows if r["c"].fit is None],
    }, market=tenant.market)


@tenant_required
@require_POST
def utility_fit_adopt_view(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    job_class = request.POST.get("job_class", "")
    try:
        adopted = utility_fit_adopt(tenant=tenant, job_class=job_class, user=request.user)
    except ValidationError as exc:
        for message in exc.message_dict.get("job_class", exc.messages):
            messages.error(request, message)
    else:
        messages.success(request, f"Adopted the fit of class {adopted.job_class!r} ({adopted.jobs} jobs) for new bids.")
    return redirect("utility-fits")


@tenant_required
@require_http_methods(["GET", "POST"])
def bid_new(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    form = BidForm(request.POST or None, resource_types=selectors.resource_types_of(market=tenant.market))
    preview, busy = None, None
    if request.method == "POST" and request.POST.get("action") == "preview":
        try:
            preview = bid_preview.preview_for_form(form, tenant, request.user.pk)  # a dry run: nothing placed or held
        except PreviewBusy as exc:  # the form keeps its values; the page says why and when to try again
            busy = exc
            messages.warning(request, str(exc))
    elif request.method == "POST" and form.is_valid():
        try:
            job_id = _submit_bid_once(request, form, tenant)
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"Bid placed: job #{job_id} holds its budget until it completes.")
            return redirect("job-detail", pk=job_id)
    response = render_page(request, "auction/bid_form.html", {
        "nav": "bid", "form": form, "account": account_of(tenant=tenant), "tenant": tenant,
        "queue": selectors.queue_paths(market=tenant.market).get(tenant.default_queue_id, ""), "preview": preview,
    }, market=tenant.market, status=200 if busy is None else 429 if busy.mine else 503)
    if busy is not None:
        response["Retry-After"] = str(busy.wait)
    return response


def _submit_bid_once(request: HttpRequest, form: BidForm, tenant: Tenant) -> int:
    """Place the form's bid; a second submission of the same rendered form (its hidden
    ``idempotency_key``) returns the first job instead of placing another bid."""
    d = form.cleaned_data

    def place() -> int:
        job = bid_submit(
            tenant=tenant, budget=d["budget"], work=form.work(), utility=d["utility"], name=d["name"], user=request.user,
            min_utility=d.get("min_utility"), job_class=d.get("job_class") or "",
            use_adopted_utility=bool(d.get("use_adopted_utility")),
        )
        return job.pk

    return form_submit_once(request=request, key=d.get("idempotency_key") or "", scope="page-bid", name="job", call=place,
                            reused="This form was already submitted with other values; reload the page to place a new bid.")


def _filters(request: HttpRequest) -> tuple[JobFilterForm, dict[str, str]]:
    """The job list's filters (and its CSV export's): scope, status, name search."""
    form = JobFilterForm(request.GET or None)
    return form, form.filters()


def _query(chosen: dict[str, str]) -> str:
    """The filters as a query string (for the CSV link and the pages), defaults left out."""
    pairs = {"scope": chosen["scope"] if chosen["scope"] != "all" else "", "status": chosen["status"], "q": chosen["search"]}
    return urlencode({k: v for k, v in pairs.items() if v})


@tenant_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    """My jobs: the tenant's auction jobs (filtered, paged, live) and the newest ``PART_JOBS`` jobs other
    parts run for it (Cura's, through ``market.hooks.tenant_part_jobs``)."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    filters, chosen = _filters(request)
    page = paginate(request, selectors.tenant_job_list(tenant=tenant, **chosen))
    types = selectors.resource_types_of(market=tenant.market)
    return render_page(request, "auction/job_list.html", {
        "nav": "jobs", "filters": filters, "status": chosen["status"], "chosen": chosen, "page": page, "types": types,
        "query": _query(chosen), "rows": job_rows(list(page.object_list), tenant.market, types),
        "part_jobs": hooks.tenant_part_jobs(tenant, PART_JOBS), "part_jobs_limit": PART_JOBS,
    }, market=tenant.market)


def _viewable_job(request: HttpRequest, pk: int) -> Job | HttpResponse:
    """The job the page shows: the tenant's own (another's is a 404), any job for staff and
    cluster managers (``visibility``: they read every job in full); others get the 403 page."""
    tenant = selectors.tenant_of(user=request.user)
    if tenant is not None:
        return get_object_or_404(selectors.tenant_jobs(tenant=tenant), pk=pk)
    viewer = visibility.viewer_of(user=request.user)
    if not viewer.all_tenants:
        return render_page(request, "web/not_tenant.html", {}, status=403)
    market = selectors.market_or_none()
    if market is None:
        raise Http404("No market.")
    return get_object_or_404(visibility.visible_jobs(market=market, viewer=viewer).select_related("queue", "tenant")
                             .prefetch_related("work__resource_type"), pk=pk)


@login_required
@require_GET
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    found = _viewable_job(request, pk)
    if isinstance(found, HttpResponse):
        return found
    job = found
    market = job.market
    figure = job_share_figure(
        selectors.share_points(market=market, job_ids=[job.pk], max_points=MAX_POINTS),
        labels={job.pk: f"#{job.pk}"}, until=selectors.job_share_until(market=market, job_ids=[job.pk]),
        origin=job.sim_submit_time, title="Share history within the queue",
    )
    return render_page(request, "auction/job_detail.html", _job_context(request, job) | {
        "figure": figure, "ledger": job_ledger(job=job), "waiting": job_waiting(job=job),
        "slo": slo_status(market=market, jobs=[job])[job.pk] if job.min_utility is not None else None,
    }, market=market)


def _job_context(request: HttpRequest, job: Job) -> dict[str, Any]:
    """What the job page's live parts (head, panels, work) show: the page and its poller share it."""
    types = selectors.resource_types_of(market=job.market)
    row = job_rows([job], job.market, types)[0]
    return {
        "nav": "jobs", "job": job, "row": row, "types": types, "work": list(job.work.all()), "own": job.tenant.user_id == request.user.pk,
        "shares": [(t, cell["share"]) for t, cell in zip(types, row["cells"], strict=True)], "active": job.status in Job.ACTIVE,
        "executions": hooks.executions(job.market, [job.pk]).get(job.pk, [])[:50],  # its tasks on a real cluster (Slurm)
    }


JOB_FRAGMENTS = {"job-head": "auction/_job_head.html", "job-panels": "auction/_job_panels.html", "job-work": "auction/_job_work.html"}


@login_required
@require_GET
@poller_revalidates
def job_detail_live(request: HttpRequest, pk: int) -> HttpResponse:
    """``{"status", "fragments": {id: html}}``: the job page's live parts, polled by ``static/js/live.js``
    (an ETag of the content: an unchanged job is a 304); the page reloads when the status changes."""
    found = _viewable_job(request, pk)
    if isinstance(found, HttpResponse):
        return JsonResponse({"detail": "Not a tenant."}, status=403)
    context = _job_context(request, found)
    return JsonResponse({"status": found.status, "fragments": {
        key: render_to_string(template, context, request=request) for key, template in JOB_FRAGMENTS.items()}})


@tenant_required
@require_GET
@poller_revalidates
def job_list_live(request: HttpRequest) -> HttpResponse:
    """``{"fragments": {"job-rows": html}}``: the job list's rows for the same filters and page, polled
    by ``static/js/live.js`` (an ETag of the content: unchanged rows are a 304)."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    _form, chosen = _filters(request)
    page = paginate(request, selectors.tenant_job_list(tenant=tenant, **chosen))
    types = selectors.resource_types_of(market=tenant.market)
    html = render_to_string("auction/_job_rows.html", {"rows": job_rows(list(page.object_list), tenant.market, types)}, request=request)
    others = render_to_string("auction/_part_jobs.html", {"part_jobs": hooks.tenant_part_jobs(tenant, PART_JOBS)}, request=request)
    return JsonResponse({"fragments": {"job-rows": html, "part-jobs": others}})


@tenant_required
@require_http_methods(["GET", "POST"])
def job_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the confirmation page (a plain form, so it works without JavaScript); POST: cancel."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    job = get_object_or_404(selectors.tenant_jobs(tenant=tenant), pk=pk)
    if request.method == "GET":
        if job.status not in Job.ACTIVE:
            messages.info(request, f"Job #{job.pk} is {job.get_status_display().lower()}; there is nothing to cancel.")
            return redirect("job-detail", pk=job.pk)
        row = job_rows([job], tenant.market, selectors.resource_types_of(market=tenant.market))[0]
        amount, charge, fixed = cancellation_preview(job=job)
        return render_page(request, "auction/job_cancel.html", {"nav": "jobs", "job": job, "row": row,
                                                                "cancel": {"amount": amount, "fixed": fixed,
                                                                           "percent": 100.0 * charge.fraction,
                                                                           "done": sum(charge.done), "total": charge.total}},
                           market=tenant.market)
    try:
        done = job_cancel(job=job, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Job #{job.pk} cancelled: it paid {format_money(done.charged)} for the service it received; "
                                  "the rest of its hold was released.")
    return redirect("job-detail", pk=job.pk)


@tenant_required
@require_GET
def job_list_csv(request: HttpRequest) -> StreamingHttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    _form, chosen = _filters(request)
    types = selectors.resource_types_of(market=tenant.market)
    jobs = selectors.tenant_job_list(tenant=tenant, **chosen)
    header = ["id", "name", "queue", "status", "utility", "budget", "held", "charged"]
    for t in types:
        header += [f"{t.name}_share", f"{t.name}_done", f"{t.name}_tasks"]
    header += ["sim_submit_s", "sim_start_s", "sim_finish_s", "response_s"]

    def rows() -> Iterator[list[Any]]:
        for chunk in Paginator(jobs, 500):
            for r in job_rows(list(chunk.object_list), tenant.market, types):
                job = r["job"]
                line: list[Any] = [job.pk, job.name, r["queue"], job.status, job.utility, job.budget, r["held"], r["charged"]]
                for share, progress in zip(r["shares"], r["progress"], strict=True):
                    line += ["" if share is None else f"{share:.6f}", *(progress or ("", ""))]
                line += [job.sim_submit_time, blank(job.sim_start_time), blank(job.sim_finish_time), blank(job.response_time)]
                yield line

    return csv_response(f"jobs-{tenant.name}.csv", header, rows())
