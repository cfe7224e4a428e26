"""Descriptions, with units, for the schema's fields that their serializers leave bare
(model fields, pagination envelopes): applied by ``schema.complete_schema``, so every
property of every component says what it is and in which unit.

Keys are ``Component.field`` first, then ``field`` for the names that mean the same
everywhere (``sim_*`` times, ``*_at`` wall times, ids, versions).
"""

from __future__ import annotations

from typing import Any

from marketplace.api.fields import money_help, money_sentence

SIM = "Simulated seconds since the market opened (market clock, not wall time)."
WALL = "Wall-clock time (ISO 8601, UTC), not simulated time."


def _docs() -> dict[str, str]:
    return {
        # names that mean the same in every component
        "id": "Identifier.", "job_id": "The job's identifier.", "job": "The job's identifier.", "quote": "The quote's identifier.",
        "replaced_by": "The identifier of the quote that replaced this one (null if none).",
        "tenant": "The tenant's name.", "name": "A free-text name.",
        "memo": "What the entry is for (a staff reason for credits and debits).",
        "resource_type": "Resource type name (e.g. map).", "status": "Status (see the enum).", "job_status": "The job's status.",
        "state_version": "Rises with every change of the market's state (bids, cancellations, capacity), a count.",
        "cleared_version": "The state version the latest clearing saw, a count.",
        "clearings": "Clearings so far, a count.", "market": "The market's name.",
        "sim_time": SIM, "sim_submit_time": "When the bid was submitted: " + SIM,
        "sim_start_time": "When the first task started: " + SIM + " Null before.",
        "sim_finish_time": "When the job finished or was cancelled: " + SIM + " Null before.",
        "start": "Start: " + SIM, "end": "End (exclusive): " + SIM, "arrival": "Window start A: " + SIM,
        "deadline": "Window end D (exclusive): " + SIM, "start_s": "Start: " + SIM, "end_s": "End: " + SIM,
        "submitted_at": "When the bid was received: " + WALL, "finished_at": "When the job ended: " + WALL,
        "expires_at": "The quote is valid until then: " + WALL, "created_at": WALL,
        "tasks": "Tasks, a count.", "pending": "Tasks waiting, a count.", "running": "Tasks running (one slot each), a count.",
        "done": "Tasks finished, a count.", "units": "Slots held at once (W), a count.", "vms": "VMs, a count.",
        "vm_type": "VM type name.", "capacity": "Slots of this resource type, a count.", "n_jobs": "Jobs in the clearing, a count.",
        "converged": "Whether the auction met its tolerance.",
        "rounds": "Auction rounds, a count.", "solve_ms": "Solver time, wall-clock milliseconds.",
        "total_ms": "Clearing time end to end, wall-clock milliseconds (null while unknown).",
        "alpha": "Auction exponent alpha in [0, 1], dimensionless (paper 000, Sec. 3).",
        "clock_speed": "Simulated seconds per wall-clock second.",
        "fairshare_history_length": "Round length L or decay half-life: simulated seconds.",
        "auction_tolerance": "Convergence tolerance of the auction, relative (dimensionless).",
        "auction_max_rounds": "Most auction rounds per clearing, a count.", "reason": "Why (kept in the audit trail).",
        "job_class": "Job class (utility weights are learnt per class).",
        "count": "Results over all pages, a count.", "next": "URL of the next page (null on the last).",
        "previous": "URL of the previous page (null on the first).",
        "username": "The login's username.", "password": "The login's password.",
        "token": "The API token: send it as 'Authorization: Token <key>'.",
        # lists and objects
        "work": "Work per resource type: tasks, simulated seconds per task, utility weight.",
        "jobs": "Jobs, one object each (see the items).", "queues": "Public totals per leaf queue (no job ids or names).",
        "resources": "Per resource type (see the items).", "prices": "Latest implied price per resource type name.",
        "last_clearing": "The newest clearing (null before the first).", "shares": "Per resource type name: share, 0 to 1.",
        "results": "This page's results.", "entry": "The ledger entry booked.", "slo": "SLO standing (null without an SLO).",
        "alternatives": "The next cheapest starts: [start (simulated s), price (money)].",
        "offers": "Quotes offered for this request, a count.",
        "capacity_map": "Slots per resource type name.", "terminated": "Ids of jobs that ended.",
        # enumerations (their values are listed in the enum's own schema)
        "utility": "Utility kind of the bid: linear or log (logscale; paper 000, Sec. 3); see the enum.",
        "kind": "Kind of ledger entry (hold, release, charge, deposit, credit, debit, ...); see the enum.",
        "mechanism": "Allocation mechanism stage, a registry name (scheduler.registry); see the enum.",
        "fairshare_policy": "Fair-share policy across queues, a registry name (paper 002); see the enum.",
        "dispatch_mode": "How tasks are dispatched to slots within the allocation; see the enum.",
        "fairshare_history": "How past usage is remembered for long-term fairness (paper 002); see the enum.",
        # amounts of money in one format (api.fields)
        "Reservation.price": money_help("Price of the whole reservation, paid at acceptance."),
        "Reservation.value": money_help("V: the most the tenant would pay (null if not given)."),
        "Quote.price": money_help("Price of the whole reservation at the quoted start."),
        "Quote.value": money_help("V: the most the tenant would pay (null if not given)."),
        "CuraJob.cost": money_help("Resource cost: VMs x unit price x runtime (rounded to the money format)."),
    }


def describe_fields(schemas: dict[str, Any]) -> None:
    """Fill in each property's missing description (``Component.field``, then ``field``),
    and make every decimal (money) field name the currency and the format."""
    docs = _docs()
    for component, body in schemas.items():
        props = body.get("properties", {})
        for prop, spec in list(props.items()):
            text = docs.get(f"{component}.{prop}") or docs.get(prop)
            if "$ref" in spec:  # a description cannot sit beside a bare $ref (OpenAPI 3.0): wrap it
                if text:
                    props[prop] = {"allOf": [spec], "description": text}
                continue
            if "allOf" in spec:
                if text and "description" not in spec:
                    spec["description"] = text
                continue
            if text and "description" not in spec:
                spec["description"] = text
            if spec.get("format") == "decimal" and money_sentence() not in spec.get("description", ""):
                spec["description"] = f"{spec.get('description', 'An amount of money.')} {money_sentence()}".strip()
