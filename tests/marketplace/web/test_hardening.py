"""Chart data carries tenants' text escaped (plotly draws a subset of
HTML), a Content-Security-Policy that allows the app's own scripts and styles only (and
templates that need nothing else), CSV exports guarded against spreadsheet formulas, and
right-to-left overrides in names shown inert."""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from marketplace.auction.services import WorkItem, bid_submit, job_cancel
from marketplace.lab.charts import comparison_figures
from marketplace.ledger.services import account_adjust
from marketplace.market.services.clearing import market_clear

ROOT = Path(__file__).resolve().parents[3]
EVIL = '<a href="//e.vil/p">PAY</a><b>bold</b><br>%{y}'
RLO = "invoice\u202egpj.exe"


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin(db):  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_user("root", password="pw-for-tests-1", is_staff=True)


def _strings(value: object) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_the_dashboards_chart_data_carries_job_names_escaped(market, alice, admin):
    bid_submit(tenant=alice, budget="5", name=EVIL, work=[WorkItem("map", 2, 60.0)])
    market_clear(market_id=market.pk)
    for client in (_client(admin), _client(alice.user)):
        figures = client.get("/dashboard/data.json").json()["figures"]
        texts = _strings(figures["jobs"])
        assert any('&lt;a href="//e.vil/p"&gt;PAY&lt;/a&gt;' in t for t in texts), texts
        assert not any(re.search(r"<(a|b|br)[\s>]", t) for t in texts)
        assert not any("%{y}" in t for t in texts if "PAY" in t)  # a name cannot add a hover field


def test_the_labs_charts_carry_configuration_labels_escaped():
    result = {"series": {"t": [0.0, 1.0], "utilisation": [[0.1, 0.2]], "running_jobs": [1, 2], "queued_jobs": [0, 1],
                         "revenue": [0, 1], "loss": [0, 0], "rho": {}},
              "prices": {"t": [[0.0]], "price": [[1.0]]},
              "jobs": {"response_s": [1.0, 2.0], "finish_s": [1.0, 2.0], "value": [1, 1], "deadline_met": [True, True]}}
    figures = comparison_figures([(EVIL, result)], type_names=["processors"])
    names = {trace["name"] for group in figures.values() for f in group for trace in f["data"]}
    assert names and all("<a " not in n and "&lt;a href=" in n for n in names), names


def test_pages_carry_a_policy_that_allows_the_apps_own_scripts_and_styles_only(alice):
    response = _client(alice.user).get("/")
    policy = dict(p.strip().split(" ", 1) for p in response["Content-Security-Policy"].split(";") if p.strip())
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
    assert policy["default-src"] == "'self'" and policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    assert "unsafe" not in response["Content-Security-Policy"]


def test_no_template_needs_inline_script_or_style():
    inline = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>|<style|\sstyle=|\son[a-z]+=|javascript:", re.I)
    offenders = []
    templates = [*ROOT.glob("templates/**/*.html"), *ROOT.glob("marketplace/*/templates/**/*.html")]
    assert len(templates) >= 30, templates  # the site's and every part's templates were read (a wrong glob reads none)
    for path in templates:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if inline.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert not offenders, offenders


def test_csv_exports_do_not_start_cells_with_a_formula(market, alice, admin):
    job = bid_submit(tenant=alice, budget="5", name='=HYPERLINK("http://e.vil","x")', work=[WorkItem("map", 1, 10.0)])
    job_cancel(job=job)
    account_adjust(tenant=alice, direction="debit", amount=Decimal("2.5"), reason="+cmd|' /C calc'!A0", user=admin)
    client = _client(alice.user)
    jobs = list(csv.reader(io.StringIO(b"".join(client.get("/jobs.csv").streaming_content).decode())))
    assert jobs[1][1] == "'=HYPERLINK(\"http://e.vil\",\"x\")"
    ledger = list(csv.reader(io.StringIO(b"".join(client.get("/account/ledger.csv").streaming_content).decode())))
    debit = next(row for row in ledger[1:] if row[2] == "debit")
    assert Decimal(debit[4]) == Decimal("-2.5")  # a negative amount stays a number (available_delta)
    assert not [cell for row in ledger for cell in row if cell and cell[0] in "=+@"]


def test_right_to_left_overrides_in_names_are_shown_inert(market, alice, admin):
    job = bid_submit(tenant=alice, budget="5", name=RLO, work=[WorkItem("map", 1, 10.0)])
    for client, url in ((_client(alice.user), "/jobs/"), (_client(alice.user), f"/jobs/{job.pk}/"), (_client(admin), "/staff/jobs/")):
        html = client.get(url).content.decode()
        assert "\u202e" not in html, url
        assert "invoice[U+202E]gpj.exe" in html, url
