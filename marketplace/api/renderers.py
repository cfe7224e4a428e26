"""JSON rendering with orjson: the same bytes as DRF's ``JSONRenderer`` for this API's answers,
in a fraction of its CPU time.

DRF renders with ``json.dumps`` and a Python ``default`` hook called for every value the
standard encoder does not know; orjson encodes the built-in types in C. What the two would
write differently is routed back to DRF's own encoder (``default``), so that an answer reads
as before:

* datetimes, dates and times (``OPT_PASSTHROUGH_DATETIME``): DRF's ISO 8601, ``Z`` for UTC;
* ``Decimal``: a number, as DRF's encoder writes it (money reaches the renderer as a string
  already: the serializers' ``COERCE_DECIMAL_TO_STRING`` and the API's own fields write it so);
* lazy strings, query sets, numpy arrays and anything with ``tolist``.

Dictionary keys that are not strings are written as strings (``OPT_NON_STR_KEYS``), as
``json.dumps`` writes them. U+2028 and U+2029 are escaped as DRF escapes them (JSON allows
them raw, JavaScript string literals do not). An indented answer (``Accept:
application/json; indent=4``) goes through DRF's renderer unchanged. NaN and infinities
become ``null`` (DRF's strict renderer raised, a 500).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer as DRFJSONRenderer
from rest_framework.utils.encoders import JSONEncoder

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
_ENCODER = JSONEncoder()


def json_bytes(data: Any) -> bytes:
    """``data`` as compact UTF-8 JSON, the bytes DRF's ``JSONRenderer`` writes (module docstring).

    Raises:
        TypeError: a value neither orjson nor DRF's encoder can write.
    """
    out = orjson.dumps(data, default=_ENCODER.default, option=_OPTIONS)
    if b"\xe2\x80\xa8" in out or b"\xe2\x80\xa9" in out:
        out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return out


class JSONRenderer(DRFJSONRenderer):
    """DRF's ``JSONRenderer`` (same media type, charset and indentation rules) writing with orjson."""

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None) -> bytes:
        if data is None:
            return b""
        if self.get_indent(accepted_media_type or "", renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)  # type: ignore[no-any-return]
        return json_bytes(data)


class ContentNegotiation(DefaultContentNegotiation):
    """DRF's negotiation with a shortcut for what nearly every API client sends: ``Accept:
    application/json`` or ``*/*`` (or no ``Accept``), no ``?format=`` and no format suffix, to a view whose
    first renderer writes JSON. DRF's own answer to such a request is that renderer and
    ``application/json``; it gets there by parsing the header and matching it against each renderer,
    on every request. Anything else (other media types, parameters such as ``indent``, a format) goes
    through DRF's negotiation unchanged."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: str | None = None) -> Any:
        accept = request.META.get("HTTP_ACCEPT", "*/*")
        if (accept in _PLAIN_ACCEPT and not format_suffix and renderers and renderers[0].media_type == "application/json"
                and self.settings.URL_FORMAT_OVERRIDE not in request.query_params):
            return renderers[0], "application/json"
        return super().select_renderer(request, renderers, format_suffix)


_PLAIN_ACCEPT = frozenset({"application/json", "*/*"})
