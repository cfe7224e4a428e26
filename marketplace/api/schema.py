"""Completing the OpenAPI schema so that a fuzzer (schemathesis) reaches the bid logic and
every answer the API can give is documented.

``complete_schema`` is a drf-spectacular post-processing hook
(``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]``):

* every operation documents the error answers it can give, and no other: 400 (field errors, NUL
  bytes, nesting), 401/403 (authentication; not on the login), 404, 429 (throttled, with
  ``Retry-After``); on writes 409 (conflict), 411 (chunked body), 413 (body too big) and 415
  (not JSON, where a body is read); 304 and 422 come from ``api.operations`` (conditional GETs,
  idempotent POSTs); all error bodies are JSON objects;
* the bid's ``work[].resource_type`` and the series' ``?resource=`` become enums of the
  market's resource types (read from the database when the schema is served), with a
  bid example that is accepted as it stands;
* ``POST /api/jobs/`` links its 201 answer to reading and cancelling that job (OpenAPI
  links: the fuzzer's stateful phase follows them: create, read, cancel).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError

from marketplace.api.schema_fields import describe_fields

log = logging.getLogger(__name__)

ERRORS = {
    "400": "Invalid input: a JSON object naming each bad field (or `body`, or the query parameter: an unknown filter "
           "value, ordering field or page_size is a 400 naming it, never an empty 200).",
    "401": "Missing, malformed or expired credentials (token or session); the WWW-Authenticate header names the scheme.",
    "403": "Authenticated but not allowed: not a tenant, not staff, or not a cluster manager.",
    "404": "No such object (another tenant's job is a 404 too).",
    "429": "Too many requests: wait for the Retry-After header's seconds.",
}
BODY_ERRORS = {  # the methods that carry a body (marketplace.web.middleware)
    "411": "A body sent chunked without Content-Length: send its length.",
    "413": "The request body is larger than the limit.",
    "415": "The body is not JSON (Content-Type application/json).",
}
WRITES = ("post", "put", "patch", "delete")
NO_CONFLICT = {("/api/auth/token/", "post"), ("/api/auth/token/", "delete")}
ANONYMOUS = {("/api/auth/token/", "post")}  # no credentials are read and no object named: never a 403 or 404 (a 401: wrong ones)


BUSY = {("/api/bids/preview/", "post"): (
    "Every slot for previews on the site is taken (PREVIEW_CONCURRENCY): wait for the Retry-After header's seconds. "
    "A second preview of the same user while the first runs is a 429.")}

CONFLICT = ("The object's current state refuses the request (cancelling an ended job, accepting or declining a quote "
            "that is no longer open); the body names the field.")


def _complete_statuses(path: str, method: str, operation: dict[str, Any]) -> None:
    """The errors the server can send for this operation, each with its JSON body (and only those)."""
    responses = operation.setdefault("responses", {})
    error_body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    codes = dict(ERRORS)
    if method in WRITES:
        codes |= BODY_ERRORS if "requestBody" in operation else {k: BODY_ERRORS[k] for k in ("411", "413")}
        if (path, method) not in NO_CONFLICT:
            codes["409"] = CONFLICT
    if (path, method) in ANONYMOUS:
        codes = {k: v for k, v in codes.items() if k not in ("401", "403", "404")}
        if path == "/api/auth/token/":  # both fields given and they do not log in
            codes["401"] = "Wrong username or password (a missing field is a 400); WWW-Authenticate names the scheme."
    for code, text in codes.items():
        responses.setdefault(code, {"description": text, "content": error_body})
    responses["429"].setdefault("headers", {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}})
    if (path, method) in BUSY:
        responses.setdefault("503", {"description": BUSY[(path, method)], "content": error_body,
                                     "headers": {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}}})
    if "401" in responses:
        responses["401"].setdefault("headers", {"WWW-Authenticate": {
            "schema": {"type": "string"}, "description": "The scheme to authenticate with: `Token` (Authorization: Token <key>)."}})
    if "201" in responses:
        responses["201"].setdefault("headers", {}).setdefault("Location", {
            "schema": {"type": "string", "format": "uri"}, "description": "The URL of what was created."})
    if path == "/api/jobs/" and method == "post":
        responses["201"]["links"] = {
            "ReadJob": {"operationId": "jobs_retrieve", "parameters": {"id": "$response.body#/id"}},
            "CancelJob": {"operationId": "jobs_cancel_create", "parameters": {"id": "$response.body#/id"}},
        }


# Open ends of the settings' ranges (market.services.config): DRF's bounds are inclusive.
EXCLUSIVE = {
    "PatchedMarketConfigRequest": {"clock_speed": ("exclusiveMinimum",), "fairshare_history_length": ("exclusiveMinimum",),
                                   "auction_tolerance": ("exclusiveMinimum", "exclusiveMaximum")},
}


def _open_ranges(schemas: dict[str, Any]) -> None:
    for component, fields in EXCLUSIVE.items():
        props = schemas.get(component, {}).get("properties", {})
        for name, ends in fields.items():
            for end in ends:
                props[name][end] = True


def _type_nullable_references(schemas: dict[str, Any]) -> None:
    """A nullable ``allOf: [$ref]`` property becomes ``oneOf: [$ref, null]``, null written as OpenAPI
    3.0 spells it (``type: object, nullable: true, enum: [null]``): 3.0 reads ``nullable`` only beside
    a ``type``, and generated clients parse an ``allOf`` as the object always (and fail on null)."""
    for body in schemas.values():
        for spec in body.get("properties", {}).values():
            refs = spec.get("allOf", [])
            if spec.get("nullable") and len(refs) == 1 and "$ref" in refs[0] and "type" not in spec:
                spec["oneOf"] = [*spec.pop("allOf"), {"type": "object", "nullable": True, "enum": [None]}]
                spec["type"] = "object"


def _bound_series_filters(result: dict[str, Any]) -> None:
    from marketplace.api.conventions import SIM_TIME_LIMIT

    for operations in result.get("paths", {}).values():
        for param in operations.get("get", {}).get("parameters", []):
            if param["name"] in ("sim_time_min", "sim_time_max"):
                param["schema"].update({"minimum": -float(SIM_TIME_LIMIT), "maximum": float(SIM_TIME_LIMIT)})


def _resource_names() -> list[str]:
    from marketplace.market.models.market import Market

    try:
        market = Market.objects.order_by("id").first()
        return [] if market is None else list(market.resource_types.order_by("stage", "id").values_list("name", flat=True))
    except DatabaseError:  # no tables yet (e.g. `manage.py spectacular` before migrate)
        return []


def complete_schema(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorBody"] = {
        "type": "object", "additionalProperties": True,
        "description": "Field name (or `detail`, `body`, a query parameter) -> message or list of messages.",
    }
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            _complete_statuses(path, method, operation)
    _describe_conventions(result)
    describe_fields(schemas)
    _type_nullable_references(schemas)
    _open_ranges(schemas)
    _bound_series_filters(result)
    names = _resource_names()
    _complete_bid(schemas, names)
    if names:
        for path in ("/api/market/fairness/", "/api/market/series/", "/api/market/prices/", "/api/reservations/prices/"):
            for param in result["paths"].get(path, {}).get("get", {}).get("parameters", []):
                if param["name"] == "resource":
                    param["schema"] = {"type": "string", "enum": names}
    return result


def _describe_conventions(result: dict[str, Any]) -> None:
    from marketplace.api.conventions import MAX_PAGE_SIZE, PAGE_SIZE
    from marketplace.api.fields import MONEY_PLACES, currency

    info = result.setdefault("info", {})
    info["description"] = (
        f"{info.get('description', '')}\n\n"
        f"**Money.** Every amount is in {currency()} (setting MARKET_CURRENCY), written as a JSON string holding a "
        f"decimal with exactly {MONEY_PLACES} places (\"25.5000\"); amounts sent may have at most {MONEY_PLACES} places. "
        "Prices are rates, JSON numbers whose description names the unit.\n\n"
        "**Time.** `sim_time`, `sim_*_time`, `arrival`, `deadline`, `start` and the series filters are simulated seconds "
        "on the market clock (since it opened); `*_at` fields are wall-clock time (ISO 8601, UTC).\n\n"
        f"**Lists.** `page` and `page_size` (1 to {MAX_PAGE_SIZE}, default {PAGE_SIZE}); `ordering` over the fields "
        "each list names ('-' for descending). Series: `resource`, `sim_time_min`, `sim_time_max`, `latest=true`, "
        "`ordering=-sim_time` for newest first. Unknown values are a 400 naming the parameter.\n\n"
        "**Authentication.** `Authorization: Token <key>` (POST /api/auth/token/) or the site's session; missing or bad "
        "credentials are a 401 with WWW-Authenticate. **Privacy.** A tenant reads its own jobs in full and other "
        "tenants' only as per-queue totals; staff and cluster managers read every tenant's."
    )


def _complete_bid(schemas: dict[str, Any], names: list[str]) -> None:
    """Work lists name each of the market's resource types at most once; a bid example that is accepted as it stands."""
    for name in ("BidRequest", "DeadlineRequestRequest", "DeadlineBookRequest"):
        body = schemas.get(name)
        if body is not None:
            body["properties"]["work"].update({"minItems": 1, "maxItems": max(len(names), 1)})
    bid = schemas.get("BidRequest")
    if bid is not None:
        bid["properties"]["budget"]["example"] = "25.5"
        if names:
            bid["example"] = {"name": "wordcount", "budget": "25.5", "utility": "linear",
                              "work": [{"resource_type": names[0], "tasks": 4, "task_duration": 30.0, "weight": 1.0}]}
    item = schemas.get("WorkItemRequest")
    if item is not None and names:
        item["properties"]["resource_type"].update({"enum": names, "example": names[0]})
    config = schemas.get("PatchedMarketConfigRequest", {}).get("properties", {}).get("reserve_prices")
    if config is not None and names:  # keyed by the market's resource types: no other key is taken
        child = config.pop("additionalProperties")
        config.update({"properties": dict.fromkeys(names, child), "additionalProperties": False})
    request = schemas.get("RequestRequest")
    if request is not None and names:
        request["properties"]["resource_type"].update({"enum": names, "example": names[0]})
