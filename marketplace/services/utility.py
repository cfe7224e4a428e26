"""Adopting a fitted utility function for a job class (paper 000, Sec. 5).

The fit is recomputed from the tenant's completed jobs at adoption (never taken
from the caller), and stored as :class:`~marketplace.models.AdoptedUtility`;
``bid_submit(use_adopted_utility=True)`` bids with it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from marketplace import adapters, selectors_abacus
from marketplace.models.accounts import Tenant
from marketplace.models.utility import AdoptedUtility
from scheduler.abacus.fit import fit_utility


@transaction.atomic
def utility_fit_adopt(*, tenant: Tenant, job_class: str, user: object = None) -> AdoptedUtility:
    """Fit the class's weights now (k >= m completed jobs) and adopt them for new bids.

    Raises:
        ValidationError: {"job_class": ...} for an empty class or fewer than m completed jobs.
    """
    job_class = job_class.strip()
    if not job_class:
        raise ValidationError({"job_class": "Name the job class to adopt a fit for."})
    types = [t.name for t in adapters.resource_types(tenant.market_id)]
    kind, points = selectors_abacus.class_training_data(tenant=tenant, job_class=job_class, types=types)
    if len(points) < len(types):
        raise ValidationError({"job_class": f"{len(points)} completed job(s) of class {job_class!r}; a fit needs at least {len(types)}."})
    fit = fit_utility([p[0] for p in points], [p[1] for p in points], kind)
    adopted, _ = AdoptedUtility.objects.update_or_create(
        tenant=tenant, job_class=job_class,
        defaults={
            "utility": kind, "jobs": fit.jobs,
            "weights": dict(zip(types, fit.weights.tolist(), strict=True)),
            "spread": dict(zip(types, fit.spread.tolist(), strict=True)),
            "adopted_by": user if getattr(user, "pk", None) else None,
        },
    )
    return adopted
