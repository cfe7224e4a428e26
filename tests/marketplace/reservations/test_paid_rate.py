"""The price shown is the price paid (docs/economy.md, section 2): an ERA quote and reservation state
what the tenant pays per slot-second of its work, and the page shows it beside the unit price."""

from __future__ import annotations

import pytest

from marketplace.market.models.jobs import Job
from marketplace.reservations.models import ReservationQuote

REQUEST = {"resource_type": "map", "units": 4, "duration": 600, "arrival": 0, "deadline": 3600}


def test_a_reservation_s_payment_over_its_work_is_the_paid_rate_its_quote_showed(alice_api):
    quote = alice_api.post("/api/reservations/quotes/", REQUEST, format="json").data
    assert quote["paid_rate"] > 0
    accepted = alice_api.post(f"/api/reservations/quotes/{quote['id']}/accept/")
    assert accepted.status_code == 201, accepted.data
    job = Job.objects.get(pk=accepted.data["job"])
    work = sum(w.tasks * w.task_duration for w in job.work.all())
    assert work == 4 * 600.0
    assert float(job.charged) / work == pytest.approx(quote["paid_rate"]) == pytest.approx(accepted.data["paid_rate"])


def test_the_quote_page_shows_the_paid_rate_beside_the_unit_price(alice_api, client, alice):
    created = alice_api.post("/api/reservations/quotes/", REQUEST | {"units": 8}, format="json").data
    client.force_login(alice.user)
    html = client.get(f"/reservations/quotes/{created['id']}/").content.decode()
    quote = ReservationQuote.objects.get(pk=created["id"])
    paid = html.split('id="quote-paid-rate">')[1].split("</dd>")[0]
    unit = html.split('id="quote-unit-price">')[1].split("</dd>")[0]
    assert f"{quote.paid_rate:.4g}" in paid and "per slot-second" in paid
    assert "per slot-second" in unit and "no unit left" not in unit
