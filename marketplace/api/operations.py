"""Per-operation schema facts that only the view knows (``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]``).

* A handler wrapped by ``api.conditional.conditional`` (or marked ``etag = True``): an optional
  ``If-None-Match`` header, ``ETag`` on the 200 and a documented ``304 Not Modified``.
* A handler wrapped by ``api.idempotency.idempotent``: the ``Idempotency-Key`` header (with its
  format) and the 422 for a reused key.
* The token scheme: ``Authorization: Token <key>``, the prefix stated where generators read it.

The errors every operation shares (400, 401, 403, 404, 429, and 411/413 where a body is read)
are added by ``api.schema.complete_schema``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from marketplace.ledger.idempotency import KEY_PATTERN

IDEMPOTENCY_KEY_PATTERN = f"^{KEY_PATTERN.pattern}$"  # printable ASCII without spaces (ledger.idempotency.valid_key)
TOKEN_PREFIX = "Token"


class TokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """``api.authentication.ExpiringTokenAuthentication``: the key with the ``Token`` prefix, not ``Bearer``."""

    target_class = "marketplace.api.authentication.ExpiringTokenAuthentication"
    name = "tokenAuth"
    priority = 1

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey", "in": "header", "name": "Authorization",
            "description": f"Send `Authorization: {TOKEN_PREFIX} <key>`: the word `{TOKEN_PREFIX}` (not `Bearer`), one space, "
                           "then the key from POST /api/auth/token/. Keys expire (a 401 says so) and rotate on each login.",
            "x-token-prefix": TOKEN_PREFIX,
        }


ETAG_HEADER = {"ETag": {"schema": {"type": "string"}, "description": "The answer's version: send it back in If-None-Match."}}
IF_NONE_MATCH = {
    "name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"},
    "description": "An ETag from an earlier answer: 304 Not Modified (no body) while the answer has not changed.",
}
NOT_MODIFIED = {"description": "Not Modified: the answer is the one whose ETag was sent in If-None-Match.",
                "headers": ETAG_HEADER}


class OperationSchema(AutoSchema):
    """drf-spectacular's AutoSchema with the conditional and idempotent handlers' headers and statuses."""

    def _handler(self) -> Any:
        action = getattr(self.view, "action", None)
        return getattr(self.view, action or self.method.lower(), None)

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        handler = self._handler()
        params = operation.setdefault("parameters", [])
        responses = operation.setdefault("responses", {})
        if getattr(handler, "etag", False):
            params.append(dict(IF_NONE_MATCH))
            if "200" in responses:
                responses["200"].setdefault("headers", {}).update(ETAG_HEADER)
            responses["304"] = dict(NOT_MODIFIED)
        if getattr(handler, "idempotent", False):
            from marketplace.api.idempotency import IDEMPOTENCY_PARAMETER

            params[:] = [p for p in params if p.get("name") != IDEMPOTENCY_PARAMETER.name]
            params.append({"name": IDEMPOTENCY_PARAMETER.name, "in": "header", "required": False,
                           "description": IDEMPOTENCY_PARAMETER.description,
                           "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN, "minLength": 1, "maxLength": 255}})
            responses["422"] = {"description": "The Idempotency-Key was used before with a different request.",
                                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
        if not params:
            operation.pop("parameters")
        return operation
