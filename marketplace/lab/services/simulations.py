"""The simulation lab: studies of one workload under several configurations, on Celery workers.

A study (``SimulationStudy``) fans out one ``ExperimentRun`` of the
registered ``simulation`` experiment per configuration and seed; each run is
the task ``simulation_run_task`` on the ``simulation`` queue (published one
by one, ``services.runs``), and claims, reports progress, heartbeats, cancels and is reaped
exactly like any experiment run (``services.experiments``). The gather step
is :func:`simulation_gather`: the run that finishes last (and the page, after
a reaped run) builds the study's table; it is a pure function of the stored
results, so running it twice changes nothing. A chord was not used: its
callback waits on every header task's result in the result backend, and a
header task whose worker was killed (acked early, below) never reports, so
the callback would never fire.

Delivery: ``simulation_run_task`` is acknowledged early (``acks_late=False``),
so Redis never redelivers a long run, whatever its length against the
broker's ``visibility_timeout`` (600 s, kept short for the market's own
tasks); a worker killed mid-run leaves the run "running" without heartbeat
and ``experiment_reap`` queues it again (with backoff) while it has attempts
left (``SIMULATION_MAX_ATTEMPTS``), else marks it failed; a run whose attempt
raised is retried the same way. Runs whose publication failed (broker down),
and retries, stay queued with ``enqueued_at`` None until the sweeper's
``experiment_requeue`` publishes them (``services.experiments``). The time limits are per task
(``SIMULATION_TIME_LIMIT_S``).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from marketplace.lab.adapters import live_workload
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.services.experiments import GONE, experiment_cancel, experiment_execute, experiment_publish
from marketplace.lab.services.quotas import dispatch_next, owner_lock, quota_check
from marketplace.lab.services.runs import task_publish
from marketplace.lab.services.uploads import upload_discard, upload_limits
from marketplace.market.roles import sees_all_tenants
from scheduler.registry import UnknownName
from simulator import experiments
from simulator.experiments.simulation import CLUSTER_KEYS, CONFIG_KEYS, WORKLOAD_KEYS, specs
from simulator.whatif.compare import summary_table
from simulator.whatif.run import check_capacity, estimate_bytes, load_workload, resource_names
from simulator.workloads.traces import TraceLimits

log = logging.getLogger(__name__)

EXPERIMENT = "simulation"
SWEEPABLE = ("alpha", "t_wait", "seed", "mechanism", "fairshare", "dispatch", "predictor")
MAX_RUNS = 64


def memory_limit_bytes() -> int:
    """What one run may use: ``SIMULATION_MEMORY_LIMIT_MB`` or half the machine's available memory."""
    configured = getattr(settings, "SIMULATION_MEMORY_LIMIT_MB", None)
    if configured:
        return int(configured) * 2**20
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2)
    except (ValueError, OSError):  # pragma: no cover - non-POSIX
        return 2**31


def _label(vary: str, value: Any) -> str:
    return f"{vary}={value}" if vary else "base"


def simulation_plan(
    *, workload: dict[str, Any], capacity: Sequence[int], base: dict[str, Any], vary: str, values: Sequence[Any], seeds: Sequence[int],
    vm_pools: str = "", check_trace: bool = True,
) -> list[tuple[str, dict[str, Any]]]:
    """The runs of a study: ``(label, params)`` per value of ``vary`` and seed, validated.

    ``vm_pools`` (``"c2:10, c8:4"``), when given, is the cluster instead of ``capacity``
    (``simulator.cura.pools``). ``check_trace=False`` leaves reading the trace (and the
    memory estimate) to :func:`simulation_check` on a worker: an upload's.

    Raises:
        ValidationError: field-keyed (``workload`` keys, ``capacity``, ``vm_pools``,
            ``vary``, ``values``, ``seeds``, a config key, ``__all__`` for
            memory) on anything that would fail or not fit, before any run exists.
    """
    if vary and vary not in SWEEPABLE:
        raise ValidationError({"vary": f"Sweep one of {', '.join(SWEEPABLE)}."})
    if vary and not values:
        raise ValidationError({"values": "Give at least one value to sweep."})
    if not seeds:
        raise ValidationError({"seeds": "Give at least one seed."})
    if vary == "seed":
        seeds, vary, values = list(values), "", [None]
    combos = list(itertools.product(values if vary else [None], seeds))
    if len(combos) > MAX_RUNS:
        raise ValidationError({"values": f"{len(combos)} runs; at most {MAX_RUNS} per study."})
    experiment = experiments.get(EXPERIMENT)
    plan: list[tuple[str, dict[str, Any]]] = []
    for value, seed in combos:
        params = {**workload, "capacity": list(capacity), "vm_pools": vm_pools, **base, "seed": int(seed)}
        if vary:
            params[vary] = value
        try:
            values_ = experiment.params(params)
            _, _, config = specs(values_)
            config.params().config()  # stage names exist
        except UnknownName as exc:
            raise ValidationError({vary or "mechanism": str(exc.args[0] if exc.args else exc)}) from None
        except (TypeError, ValueError) as exc:
            key, _, msg = str(exc).partition(": ")
            raise ValidationError({key if key in (*WORKLOAD_KEYS, *CONFIG_KEYS, *CLUSTER_KEYS) else "__all__": msg or key}) from None
        plan.append((_label(vary, value), values_))
    if check_trace:
        _check_workload(plan[0][1])
    return plan


def _check_workload(params: dict[str, Any], limits: TraceLimits | None = None) -> None:
    workload, capacity, config = specs(params)
    try:
        jobs = load_workload(workload, limits)
        check_capacity(jobs, capacity)
    except FileNotFoundError:
        raise ValidationError({"trace": "No such trace file."}) from None
    except ValueError as exc:
        key, _, msg = str(exc).partition(": ")
        field = key if key in (*WORKLOAD_KEYS, *CLUSTER_KEYS) else "trace"
        raise ValidationError({field: msg if field == key else str(exc)}) from None
    need, limit = estimate_bytes(jobs, capacity, config.sample_interval), memory_limit_bytes()
    if need > limit:
        raise ValidationError(
            {"__all__": f"This run would need about {need / 2**20:,.0f} MB, more than the {limit / 2**20:,.0f} MB a worker "
                        f"may use ({len(jobs):,} jobs): take a shorter slice, fewer jobs (max_jobs) or a coarser sample interval."}
        )  # fmt: skip


def simulation_start(
    *,
    title: str,
    workload: dict[str, Any],
    capacity: Sequence[int],
    base: dict[str, Any],
    vary: str = "",
    values: Sequence[Any] = (),
    seeds: Sequence[int] = (0,),
    vm_pools: str = "",
    user: Any,
    market: Any = None,
    live: dict[str, Any] | None = None,
    trace_name: str = "",
    uploaded: bool = False,
) -> SimulationStudy:
    """Create a study and queue its runs (one Celery task each, after commit).

    ``uploaded``: the trace is an upload, read first by :func:`simulation_check` on a worker
    (the study is "checking" and its runs wait); ``trace_name`` is how the pages name the trace
    (default: the file's name; never a server path).

    Raises:
        PermissionDenied: ``user`` is neither staff nor a tenant.
        ValidationError: see :func:`simulation_plan`; a tenant's quota of kept uploads or of
            queued and running runs (``services.quotas.quota_check``).
    """
    if not (getattr(user, "is_staff", False) or hasattr(user, "tenant")):
        raise PermissionDenied("Only staff and tenants may start simulations.")
    plan = simulation_plan(workload=workload, capacity=capacity, base=base, vary=vary, values=values, seeds=seeds, vm_pools=vm_pools,
                           check_trace=not uploaded)
    capacity = specs(plan[0][1])[1]  # the pools' slots when pools were given
    if vm_pools:
        workload = {**workload, "vm_pools": vm_pools}  # kept with the study's settings
    with transaction.atomic():
        owner_lock([getattr(user, "pk", None)])  # one tenant's parallel starts are counted one after the other
        stored = Path(str(workload["trace"])) if uploaded else None
        quota_check(user=user, runs=len(plan), upload=stored, swept=bool(vary) and vary != "seed")
        study = SimulationStudy.objects.create(
            title=title[:200] or "what-if", kind=SimulationStudy.Kind.LIVE if market is not None else SimulationStudy.Kind.TRACE,
            workload=workload, capacity=list(capacity), base=base, vary=vary if vary != "seed" else "",
            market=market, live=live, created_by=user, trace_name=(trace_name or Path(str(workload.get("trace", ""))).name)[:200],
            check_status=SimulationStudy.Check.CHECKING if uploaded else SimulationStudy.Check.NONE,
        )  # fmt: skip
        most = int(getattr(settings, "SIMULATION_MAX_ATTEMPTS", 3))
        runs = ExperimentRun.objects.bulk_create(
            [ExperimentRun(name=EXPERIMENT, params=p, label=label, study=study, created_by=user, message="queued", max_attempts=most)
             for label, p in plan]
        )
        ids = [r.pk for r in runs]
        if uploaded:
            transaction.on_commit(lambda: task_publish(kind="check", ids=[study.pk]))
        else:
            transaction.on_commit(lambda: experiment_publish(run_ids=ids))
    return study


def simulation_check_requeue() -> list[int]:
    """Publish again the checks of uploads still "checking" well after their time limit (their
    task never reached a worker, or the worker died): the sweeper calls it now and then
    (``lab.hooks``; a check twice is harmless). Returns the study ids."""
    stale = timezone.now() - timedelta(seconds=float(settings.SIMULATION_UPLOAD_CHECK_S) + 120.0)
    ids = list(SimulationStudy.objects.filter(check_status=SimulationStudy.Check.CHECKING, created_at__lt=stale)
               .order_by("pk").values_list("pk", flat=True)[:20])
    task_publish(kind="check", ids=ids)
    return ids


def simulation_check(*, study_id: int) -> str:
    """Read a study's uploaded trace on a worker, within ``upload_limits()`` (lines, seconds),
    check its capacity and memory as :func:`simulation_plan` does for other traces; then queue
    its runs ("passed"), or refuse it ("refused": the message, with the line at fault, on the
    study page; its runs failed, the file deleted). Idempotent: a study not "checking" is left alone.
    """
    study = SimulationStudy.objects.get(pk=study_id)
    if study.check_status != SimulationStudy.Check.CHECKING:
        return study.check_status
    runs = list(ExperimentRun.objects.filter(study=study).order_by("pk"))
    try:
        _check_workload(runs[0].params, upload_limits())
    except ValidationError as exc:
        text = "; ".join(f"{k}: {' '.join(v)}" if k != "__all__" else " ".join(v) for k, v in exc.message_dict.items())
        sent_as = study.trace_name.removeprefix("upload ") or "the file"
        return _refuse(study, runs, text.replace(Path(str(study.workload.get("trace", ""))).name, sent_as))  # its name as sent
    except Exception as exc:  # a time limit, memory: the file is refused, never retried
        log.exception("the check of study %s failed", study_id)
        return _refuse(study, runs, f"The file could not be read ({type(exc).__name__}).")
    updated = SimulationStudy.objects.filter(pk=study.pk, check_status=SimulationStudy.Check.CHECKING).update(
        check_status=SimulationStudy.Check.PASSED, check_message=f"{len(runs)} run(s) queued.")
    if updated:
        experiment_publish(run_ids=[r.pk for r in runs])
    return SimulationStudy.Check.PASSED


def _refuse(study: SimulationStudy, runs: list[ExperimentRun], message: str) -> str:
    with transaction.atomic():
        SimulationStudy.objects.filter(pk=study.pk).update(check_status=SimulationStudy.Check.REFUSED, check_message=message[:2000])
        ExperimentRun.objects.filter(pk__in=[r.pk for r in runs], status=ExperimentRun.Status.QUEUED).update(
            status=ExperimentRun.Status.FAILED, message="not run: the uploaded trace was refused", error=message[:2000],
            finished_at=timezone.now())
    upload_discard(study.workload.get("trace", ""))
    simulation_gather(study_id=study.pk)
    return SimulationStudy.Check.REFUSED


def simulation_execute(*, run_id: int) -> str:
    """Run one configuration (``experiment_execute``), then gather its study if it was the last,
    and publish the owner's next runs waiting for their dispatch window (``services.quotas``)."""
    status = experiment_execute(run_id=run_id)
    if status == GONE:  # deleted (with its study): nothing to gather or publish
        return status
    study_id, owner = ExperimentRun.objects.values_list("study_id", "created_by_id").get(pk=run_id)
    if study_id is not None:
        simulation_gather(study_id=study_id)
    if owner is not None:
        experiment_publish(run_ids=dispatch_next(user_id=owner))
    return status


def simulation_gather(*, study_id: int) -> bool:
    """Build the study's comparison table once every run has finished; False while some run.

    The table is :func:`simulator.whatif.compare.summary_table` over the
    finished runs (mean and 95 % interval over seeds per configuration).
    """
    runs = list(ExperimentRun.objects.filter(study_id=study_id).only("status", "label", "params").order_by("pk"))
    if not runs or any(r.status in (ExperimentRun.Status.QUEUED, ExperimentRun.Status.RUNNING) for r in runs):
        return False
    done = [r.pk for r in runs if r.status == ExperimentRun.Status.DONE]
    metrics = dict(ExperimentRun.objects.filter(pk__in=done).values_list("pk", "result__metrics"))
    rows = [(r.label, int(r.params.get("seed", 0)), _as_dict(metrics.get(r.pk))) for r in runs if r.pk in metrics]
    table = summary_table(rows, type_names=study_type_names(runs[0].params))
    table["failed"] = [r.label for r in runs if r.status != ExperimentRun.Status.DONE]
    SimulationStudy.objects.filter(pk=study_id).update(summary=table, gathered_at=timezone.now())
    _upload_release(study_id)
    return True


def _upload_release(study_id: int) -> None:
    """Delete an ended study's uploaded trace (no run reads it any more): it leaves its owner's
    storage quota (``services.quotas``). A study cancelled while its upload was being checked
    ends too (a check that comes later finds no file and refuses it). A study whose trace is
    not an upload is left alone."""
    study = SimulationStudy.objects.only("workload", "check_status").get(pk=study_id)
    if study.check_status in (SimulationStudy.Check.CHECKING, SimulationStudy.Check.PASSED):
        upload_discard(study.workload.get("trace", ""))


def study_type_names(params: dict[str, Any]) -> list[str]:
    """The resource types' names of a study's runs ("map", "reduce"; "processors"), from a run's params."""
    try:
        workload, capacity, _ = specs(params)
    except (TypeError, ValueError, KeyError):
        return []
    return resource_names(workload, len(capacity))


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str):  # SQLite returns a JSON path lookup as text
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def simulation_cancel(*, study_id: int, user: Any) -> int:
    """Cancel every unfinished run of a study; returns how many were asked to stop.

    Raises:
        PermissionDenied: ``user`` is neither staff nor the study's creator.
    """
    study = SimulationStudy.objects.get(pk=study_id)
    if not (getattr(user, "is_staff", False) or study.created_by_id == getattr(user, "pk", None)):
        raise PermissionDenied("Only staff or the study's creator may cancel it.")
    pending = ExperimentRun.objects.filter(study_id=study_id, status__in=[ExperimentRun.Status.QUEUED, ExperimentRun.Status.RUNNING])
    ids = list(pending.values_list("pk", flat=True))
    for pk in ids:
        experiment_cancel(run_id=pk, user=user)
    simulation_gather(study_id=study_id)
    if study.created_by_id is not None:
        experiment_publish(run_ids=dispatch_next(user_id=study.created_by_id))  # its queued runs left the window
    return len(ids)


def simulation_from_market(
    *, market: Any, user: Any, window_h: float, vary: str, values: Sequence[Any], seeds: Sequence[int] = (), title: str = ""
) -> SimulationStudy:
    """"What if ``vary`` were each of ``values`` over the last ``window_h`` simulated hours?"

    The market's jobs submitted in the window (``lab.adapters.live_workload``:
    their bids as placed, the queue tree, the capacities) are written as a
    jobs document and replayed from an empty cluster at the window's start
    under the market's own settings (the baseline, added to ``values``) and
    under each value; the study keeps what the live market did with them
    (``SimulationStudy.live``) so the page can compare. Jobs submitted before
    the window and still running in it are not replayed.

    Raises:
        PermissionDenied: neither staff nor a cluster manager (the replay holds
            every tenant's bids, which tenants see only as aggregates).
        ValidationError: ``window_h`` not > 0, no job in the window, or see
            :func:`simulation_plan`.
    """
    if not sees_all_tenants(user):
        raise PermissionDenied("Only staff and cluster managers may replay the live market.")
    if not window_h > 0:
        raise ValidationError({"window_h": "The window must be longer than 0 simulated hours."})
    market.refresh_from_db()
    doc = live_workload(market=market, since=max(0.0, market.sim_time - 3600.0 * window_h))
    if not doc["jobs"]:
        raise ValidationError({"window_h": f"No job was submitted in the last {window_h:g} simulated hours."})
    live = doc.pop("live")
    folder = Path(settings.SIMULATION_UPLOAD_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"live-market{market.pk}-{timezone.now():%Y%m%dT%H%M%S%f}.json"
    path.write_text(json.dumps(doc))
    base = {"mechanism": market.mechanism, "fairshare": market.fairshare_policy, "dispatch": market.dispatch_mode,
            "alpha": float(market.alpha), "t_wait": float(market.t_wait)}  # fmt: skip
    live_value = base.get(vary)
    swept = [live_value, *[v for v in values if v != live_value]] if vary in base else list(values)
    workload = {"trace": str(path), "trace_format": "jobs", "start_hour": 0.0, "hours": window_h + 1.0, "time_scale": 1.0,
                "tenants": 1, "groups": 1, "max_jobs": 0, "workload_seed": 0}  # fmt: skip
    live["baseline"] = _label(vary, live_value) if vary in base else ""
    return simulation_start(
        title=title or f"What if {vary} were {', '.join(str(v) for v in values)} on {market.name}?",
        workload=workload, capacity=doc["capacity"], base=base, vary=vary, values=swept, seeds=list(seeds) or [market.pk],
        user=user, market=market, live=live,
    )  # fmt: skip
