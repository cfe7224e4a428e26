"""JSON parsing that answers 400, never 500, for any body.

``json.loads`` recurses once per nesting level, so a body of 100,000 ``[``
raises ``RecursionError`` (DRF's parser catches only ``ValueError``), and a
body that parses but nests thousands of levels deep would recurse again in
the serializers. Bodies are refused above :data:`MAX_JSON_DEPTH` levels, a
depth no request of this API needs (a bid is three levels deep).

A UTF-8 body is parsed by orjson (in C, no recursion); what orjson refuses (``NaN`` and
``Infinity`` literals, integers past 64 bits, other encodings, malformed JSON) is parsed
again by DRF's parser, so such a body gets the answer it got before.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Mapping
from typing import Any

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

MAX_JSON_DEPTH = 32


def json_depth_exceeds(data: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if ``data`` (parsed JSON) nests containers more than ``limit`` levels deep (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class SafeJSONParser(JSONParser):
    """DRF's JSON parser with a nesting limit and an object at the top (every endpoint takes one);
    ``NaN``/``Infinity`` literals still parse, so that they reach field validation and get a field
    error (``strict = False``)."""

    strict = False

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        try:
            data = self._load(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError({"body": [f"JSON nested deeper than {MAX_JSON_DEPTH} levels."]}) from None
        if json_depth_exceeds(data):
            raise ParseError({"body": [f"JSON nested deeper than {MAX_JSON_DEPTH} levels."]})
        if not isinstance(data, dict):
            # every endpoint of this API takes an object; a list, string or number reached views that index it (500)
            raise ParseError({"body": [f"Expected a JSON object, got {type(data).__name__ if data is not None else 'null'}."]})
        return data

    def _load(self, stream: Any, media_type: str | None, parser_context: Mapping[str, Any] | None) -> Any:
        """The parsed body: orjson's for UTF-8 when it accepts it, else DRF's (module docstring)."""
        if codecs.lookup(get_encoding(parser_context or {})).name != "utf-8":
            return super().parse(stream, media_type, parser_context)
        raw = stream.read()
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return super().parse(io.BytesIO(raw), media_type, parser_context)
