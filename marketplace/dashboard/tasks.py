"""Celery tasks of the dashboard: its figures, computed on a worker after a tick (``dashboard.figures``)."""

from __future__ import annotations

from celery import shared_task

from marketplace.dashboard.figures import figures_warm


@shared_task(name="marketplace.tasks.dashboard_figures_task", ignore_result=True)
def dashboard_figures_task(market_id: int) -> bool:
    """Compute the market's newest dashboard figures unless kept already; idempotent (a duplicate finds them kept)."""
    return figures_warm(market_id)
