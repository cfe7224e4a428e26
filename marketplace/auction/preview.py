"""The bid form's price preview: the form's values in, a page-ready preview out (paper 000's auction run on a copy of the market).

A dry run (``bid_preview``): nothing is placed, held or stored.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from marketplace.auction.admission import preview_slot
from marketplace.auction.charts import price_preview_figure
from marketplace.auction.forms import BidForm
from marketplace.auction.selectors import bid_preview
from marketplace.auction.services import bid_terms
from marketplace.market.models.tenants import Tenant


def preview_for_form(form: BidForm, tenant: Tenant, user_id: int) -> dict[str, Any] | None:
    """``{"preview", "figure", "rows", "at"}`` for a valid form, else None (the form keeps its
    errors; service errors are attached to their fields).

    Raises:
        PreviewBusy: the user ``user_id`` has a preview running, or every site slot is taken
            (``auction.admission``); nothing was computed.
    """
    if not form.is_valid():
        return None
    d = form.cleaned_data
    try:
        _, work, utility = bid_terms(tenant=tenant, name=d.get("name") or "", job_class=d.get("job_class") or "", work=form.work(),
                                     utility=d["utility"], use_adopted_utility=bool(d.get("use_adopted_utility")))
        with preview_slot(user_id):
            preview = bid_preview(tenant=tenant, budget=float(d["budget"]), work=work, utility=utility,
                                  min_utility=d.get("min_utility"))
    except ValidationError as exc:
        form.add_service_errors(exc)
        return None
    rows = preview.rows()
    return {
        "preview": preview, "rows": rows, "at": next(r for r in rows if r["budget"] == preview.entered),
        "suggested": next((r for r in rows if r["budget"] == preview.suggested), None),
        "figure": price_preview_figure(rows, types=preview.types, entered=preview.entered),
    }
