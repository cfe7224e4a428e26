"""Per-tenant lab quotas, and fair queueing of the simulation workers between tenants.

Quotas (checked by ``services.simulations.simulation_start`` with the owner's user row locked, so
parallel requests of one tenant are counted one after the other; staff are exempt):

* storage: the bytes of uploaded traces a tenant keeps, at most ``LAB_QUOTA_UPLOAD_BYTES``. An
  upload is kept while its study has runs to do and deleted when the study ends (its last run
  finished, failed or was cancelled: nothing reads it after that), or at once when it is refused;
* runs: at most ``LAB_QUOTA_RUNS`` of a tenant's runs queued or running at once.

A refused start raises a field-keyed ``ValidationError`` (``upload`` for storage; ``values``, or
``seeds`` when nothing is swept, for runs) and the form shows it on the field.

Fair queueing (a dispatch window per owner): the broker's simulation queue is
first in, first out, so a tenant that queued 192 runs put every other tenant's study behind 190.
Now at most ``LAB_DISPATCH_PER_TENANT`` (k) of an owner's study runs are with the workers at
once (published and not started, or running); the rest stay queued in the database
(``enqueued_at`` None, the message says why) and are published as the owner's own runs end
(``simulation_execute`` releases the next ones at once, the sweeper's ``experiment_requeue``
within a sweep). A newcomer's first run is therefore behind at most k runs of each other
owner, whatever they queued. The window applies only with a broker: eager Celery and the
in-thread mode run in this process and have no queue to share.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Q

from marketplace.celery import app
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.services.runs import in_thread
from marketplace.lab.services.uploads import upload_dir

Status = ExperimentRun.Status
KEPT = (SimulationStudy.Check.CHECKING, SimulationStudy.Check.PASSED)  # an upload on disk for runs still to do


def waiting_message() -> str:
    """What a run held back by the window says (``ExperimentRun.message``)."""
    return f"waiting: at most {dispatch_window()} runs per tenant go to the workers at once"


def dispatch_window() -> int:
    """k: an owner's study runs with the workers at once (``LAB_DISPATCH_PER_TENANT``, at least 1)."""
    return max(1, int(getattr(settings, "LAB_DISPATCH_PER_TENANT", 4)))


def _mb(n: float) -> str:
    return f"{n / 2**20:,.1f} MB"


def upload_bytes_kept(*, user_id: int) -> int:
    """Bytes of the uploaded traces kept on disk for ``user_id``'s studies (unfinished ones)."""
    folder, total = upload_dir().resolve(), 0
    for workload in SimulationStudy.objects.filter(created_by_id=user_id, check_status__in=KEPT).values_list("workload", flat=True):
        path = Path(str(workload.get("trace", ""))) if isinstance(workload, dict) else None
        if path is not None and path.parent.resolve() == folder and path.is_file():
            total += path.stat().st_size
    return total


def runs_active(*, user_id: int) -> int:
    """``user_id``'s runs queued or running (parents of split runs not counted: their parts are)."""
    rows = ExperimentRun.objects.filter(created_by_id=user_id, status__in=[Status.QUEUED, Status.RUNNING])
    return int(rows.exclude(parts__isnull=False).count())


def quota_check(*, user: Any, runs: int, upload: Path | None, swept: bool) -> None:
    """Refuse a study that would take ``user`` over a quota; call it with the user's row locked
    (:func:`owner_lock`) and the study not yet created. ``upload``: its stored trace, if any.

    Raises:
        ValidationError: ``{"upload": ...}`` over ``LAB_QUOTA_UPLOAD_BYTES``;
            ``{"values" | "seeds": ...}`` over ``LAB_QUOTA_RUNS`` (``values`` when ``swept``).
    """
    if getattr(user, "is_staff", False) or getattr(user, "pk", None) is None:
        return
    errors: dict[str, str] = {}
    if upload is not None:
        most, kept = int(settings.LAB_QUOTA_UPLOAD_BYTES), upload_bytes_kept(user_id=user.pk)
        size = upload.stat().st_size
        if kept + size > most:
            errors["upload"] = (f"Storage quota: your unfinished studies keep {_mb(kept)} of uploads and this file adds "
                                f"{_mb(size)}; a tenant may keep {_mb(most)}. An upload is deleted when its study ends: "
                                f"wait for one to finish or cancel one.")  # fmt: skip
    most_runs, active = int(settings.LAB_QUOTA_RUNS), runs_active(user_id=user.pk)
    if active + runs > most_runs:
        errors["values" if swept else "seeds"] = (
            f"Run quota: you have {active} runs queued or running and this study adds {runs}; a tenant may have "
            f"{most_runs}. Wait for some to finish, cancel a study, or sweep fewer values or seeds.")  # fmt: skip
    if errors:
        raise ValidationError(errors)


def owner_lock(user_ids: Sequence[int | None]) -> None:
    """Lock the owners' user rows (primary-key order), inside the caller's transaction: one
    owner's quota checks and dispatch decisions then happen one at a time."""
    ids = sorted({pk for pk in user_ids if pk is not None})
    if ids:
        list(get_user_model().objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk", flat=True))


def windowed() -> bool:
    """True when study runs go through a broker's queue (the window applies)."""
    return not in_thread() and not app.conf.task_always_eager


def dispatch_held(*, run_ids: Sequence[int]) -> list[int]:
    """Of the study runs in ``run_ids`` (queued, about to be published), those that must wait:
    past the first ``k - in flight`` of each owner, in the order given. Call it inside a
    transaction after :func:`owner_lock` on their owners. Runs of no study, or of no owner, are
    never held; nothing is held when the window does not apply (:func:`windowed`)."""
    if not windowed() or not run_ids:
        return []
    rows = list(ExperimentRun.objects.filter(pk__in=run_ids, study__isnull=False, status=Status.QUEUED, created_by__isnull=False)
                .values_list("pk", "created_by_id"))  # fmt: skip
    owner = dict(rows)
    flying = (ExperimentRun.objects.filter(study__isnull=False, created_by_id__in=set(owner.values()))
              .filter(Q(status=Status.RUNNING) | Q(status=Status.QUEUED, enqueued_at__isnull=False)).exclude(pk__in=list(owner)))
    in_flight: dict[int, int] = defaultdict(int)
    for user_id in flying.values_list("created_by_id", flat=True):
        in_flight[user_id] += 1
    k, held = dispatch_window(), []
    for pk in run_ids:
        if pk not in owner:
            continue
        if in_flight[owner[pk]] < k:
            in_flight[owner[pk]] += 1
        else:
            held.append(pk)
    return held


def dispatch_next(*, user_id: int) -> list[int]:
    """The owner's study runs waiting for the window, oldest first, at most k (the candidates to
    publish when one of theirs ends)."""
    rows = ExperimentRun.objects.filter(created_by_id=user_id, study__isnull=False, status=Status.QUEUED, enqueued_at__isnull=True,
                                        retry_at__isnull=True, cancel_requested=False).exclude(study__check_status="checking")  # fmt: skip
    return list(rows.order_by("pk").values_list("pk", flat=True)[: dispatch_window()])
