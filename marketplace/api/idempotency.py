"""``@idempotent``: the ``Idempotency-Key`` header on a DRF view method, in one line.

    class JobViewSet(...):
        @idempotent
        def create(self, request): ...

Without the header the method runs as before. A replayed ``201`` carries ``Location`` again when
the view names it from the answer's body (``location_of(body) -> path``). With it, the method runs at most
once per (user, key) (``ledger.idempotency.idempotent_call``): a repeat of the
same request gets the first 2xx answer again, with ``Idempotent-Replayed: true``,
and moves nothing; a repeat with another body or path is a 422; a malformed key
is a 400. Keys expire after ``IDEMPOTENCY_KEY_TTL_S`` (24 h).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import orjson
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from marketplace.api.renderers import json_bytes
from marketplace.ledger.idempotency import KeyReused, Outcome, idempotent_call, request_fingerprint, valid_key

HEADER = "Idempotency-Key"

IDEMPOTENCY_PARAMETER = OpenApiParameter(
    HEADER, str, location=OpenApiParameter.HEADER, required=False,
    description="Up to 255 printable ASCII characters. Repeating a request with the same key returns the first answer "
                "and moves no money; the same key with another request is a 422. Keys expire after 24 hours.",
)


def _body(request: Request) -> object:
    data = request.data
    return dict(data.lists()) if hasattr(data, "lists") else data


def in_idempotent_call(request: Request) -> bool:
    """True while ``request``'s view method runs inside :func:`idempotent`'s transaction, which
    rolls back whole (the key with every write) on any error or non-2xx answer: a service the
    method calls needs no savepoint of its own there."""
    return bool(getattr(request, "_idempotent_call", False))


def idempotent(method: Callable[..., Response]) -> Callable[..., Response]:
    """Wrap a DRF view method (``self, request, *args, **kwargs``) with ``Idempotency-Key`` handling."""

    @wraps(method)
    def wrapper(self: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(HEADER)
        if key is None:
            return method(self, request, *args, **kwargs)
        if not valid_key(key):
            return Response({HEADER: ["Use 1 to 255 printable ASCII characters without spaces."]}, status=400)

        first: dict[str, str] = {}

        def call() -> Outcome:
            request._idempotent_call = True  # see in_idempotent_call
            try:
                response = method(self, request, *args, **kwargs)
            finally:
                request._idempotent_call = False
            if response.has_header("Location"):
                first["Location"] = response["Location"]
            body = orjson.loads(json_bytes(response.data)) if response.data is not None else None
            return Outcome(response.status_code, body)

        fingerprint = request_fingerprint(method=request.method or "POST", path=request.path, body=_body(request))
        try:
            outcome = idempotent_call(user=request.user, key=key, fingerprint=fingerprint, call=call)
        except KeyReused:
            return Response({HEADER: ["This key was already used with a different request."]}, status=422)
        headers = dict(first)
        if outcome.replayed:
            headers["Idempotent-Replayed"] = "true"
            location_of = getattr(self, "location_of", None)  # a replayed 201 names what the first one created
            if outcome.status_code == 201 and location_of is not None and isinstance(outcome.body, dict):
                headers["Location"] = request.build_absolute_uri(location_of(outcome.body))
        return Response(outcome.body, status=outcome.status_code, headers=headers or None)

    wrapper.idempotent = True  # type: ignore[attr-defined]  # the schema documents the header's format and the 422 (api.operations)
    return wrapper
