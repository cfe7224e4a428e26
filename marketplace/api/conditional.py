"""ETag / ``If-None-Match`` and a response cache for the read endpoints pollers hit.

Every answer of these endpoints is a function of database rows that only change
together with the market's row: bids, cancellations, departures, reservations and
configuration changes raise ``state_version`` (``market.services.market.market_changed``) or
change a configuration column; a clearing raises ``cleared_version`` and ``clearings``
and writes the prices; a clock tick moves ``sim_time`` and stores the engine under a new
``engine_version`` (tasks started and finished, samples, charges); the queue tree and the
resource types change ``structure_version``; ``created_at`` tells a market from an
earlier one with the same id (a database recreated under a cache that kept its bodies). So one small query for those columns (the
"marks") names the version of the data, and the ETag is a hash of

    (the endpoint's path and query string, the marks it depends on, who is asking, the renderer).

* ``If-None-Match`` with that tag: ``304 Not Modified``, nothing else is read.
* ``@conditional(scope="market")`` -- the same answer for every caller of one audience
  (staff, or any other login: public aggregates such as the market state, series, prices
  and fairness per queue). Rendered bodies are cached under the tag, in this process (a
  small LRU) and in the shared cache (Redis), so all web processes compute each version
  once. ``depends="ticks"`` keys an endpoint that reads only what ticks write (the fairness
  and market samples: ``market.services.clock``), so neither a bid nor a clearing invalidates it;
  ``depends="samples"`` keys an endpoint that reads only what ticks and clearings
  write (samples, prices) on those marks alone, so a bid does not invalidate it.
* ``@conditional(scope="user")`` -- per caller (a tenant's jobs, the allocation):
  the tag includes the user id; no body is shared between callers, only the 304.

Answers carry ``ETag``, ``Cache-Control: private, no-cache`` (a client may keep the
body but must revalidate) and ``Vary: Accept, Authorization, Cookie``. Only ``200``
JSON answers are tagged and cached; anything else (errors, the browsable API) passes
through untouched. A cache outage is a miss (``marketplace.infra.resilience``).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC
from functools import lru_cache, wraps
from typing import Any

from django.db import connection
from django.http import HttpResponse, HttpResponseNotModified
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.dateparse import parse_datetime
from django.utils.http import parse_etags
from rest_framework.request import Request
from rest_framework.response import Response

from marketplace.infra.resilience import cache_get, cache_set
from marketplace.market.models.market import Market

CACHE_S = 60  # a body is stored under its tag, which names one version: it is never stale, only unused
LOCAL_MAX = 256  # bodies kept per process
_SAMPLES = ("id", "created_at", "cleared_version", "clearings", "sim_time", "engine_version", "structure_version")
_ALL = (*_SAMPLES, "state_version", "name", "alpha", "t_wait", "clock_speed", "mechanism", "fairshare_policy", "dispatch_mode",
        "fairshare_history", "fairshare_history_length", "auction_tolerance", "auction_max_rounds")
_TICKS = ("id", "created_at", "sim_time", "engine_version", "structure_version")
DEPENDS = {name: tuple(_ALL.index(f) for f in fields) for name, fields in (("ticks", _TICKS), ("samples", _SAMPLES), ("all", _ALL))}
_VERSION = "1"  # bump when the shape of any tagged answer changes (a deploy must not 304 an old body)


@lru_cache(maxsize=4)
def _marks_sql(vendor: str, by_id: bool) -> str:
    q = connection.ops.quote_name
    cols = ", ".join(q(Market._meta.get_field(f).column) for f in _ALL)
    where = f" WHERE {q('id')} = %s" if by_id else ""
    return f"SELECT {cols} FROM {q(Market._meta.db_table)}{where} ORDER BY {q('id')} LIMIT 1"


def market_marks(market_id: int | None = None) -> tuple[Any, ...] | None:
    """The version columns (see the module docstring) of market ``market_id``, or of the first
    market (the one the pages and the market-wide endpoints show); None if there is none."""
    with connection.cursor() as cursor:
        cursor.execute(_marks_sql(connection.vendor, market_id is not None), [] if market_id is None else [market_id])
        row = cursor.fetchone()
    return tuple(row) if row is not None else None


_ROW_FIELDS = _ALL


def _aware(value: Any) -> Any:
    """A raw ``created_at`` as the model holds it: SQLite's cursor gives the text it stores (UTC)."""
    if isinstance(value, str):
        parsed = parse_datetime(value)
        return parsed if parsed is None or timezone.is_aware(parsed) else timezone.make_aware(parsed, UTC)
    return value


def marked_market(request: Request, market_id: int | None = None) -> Market | None:
    """The market whose marks ``@conditional`` read for this request, as a model instance
    built from those columns (the others deferred: read on first access), or None when
    no marks were read (or they are of another market than ``market_id``).

    Every column of the market state (name, clock, versions, knobs) is among the marks, so a
    view that shows them needs no second read of the row."""
    marks = getattr(request, "market_marks", None)
    if marks is None or (market_id is not None and marks[0] != market_id):
        return None
    values = dict(zip(_ALL, marks, strict=True))
    values["created_at"] = _aware(values["created_at"])  # the caches key the market's history by it (infra.windows)
    names = [f.attname for f in Market._meta.concrete_fields if f.attname in _ROW_FIELDS]  # from_db wants model order
    return Market.from_db(connection.alias, names, [values[n] for n in names])


class _LocalBodies:
    """A small thread-safe LRU of rendered bodies by tag."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, tag: str) -> bytes | None:
        with self._lock:
            body = self._items.get(tag)
            if body is not None:
                self._items.move_to_end(tag)
            return body

    def put(self, tag: str, body: bytes) -> None:
        with self._lock:
            self._items[tag] = body
            self._items.move_to_end(tag)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


LOCAL = _LocalBodies(LOCAL_MAX)


def audience(request: Request, scope: str) -> str:
    """Who an answer is for: the user (``scope="user"``), or the role (``"market"``: staff or any
    other login). A ``"market"`` view may differ only between staff and the rest (the market
    state's staff fields); one that shows a cluster manager or a tenant more than public data
    (``market.visibility``) takes ``scope="user"``, as the allocation does."""
    user = request.user
    if scope == "user":
        return f"user:{user.pk}"
    return "staff" if getattr(user, "is_staff", False) else "login"


def etag_for(request: Request, marks: tuple[Any, ...], scope: str) -> str:
    renderer = getattr(request, "accepted_renderer", None)
    parts = (_VERSION, request.get_full_path(), marks, audience(request, scope), getattr(renderer, "format", ""),
             getattr(request, "accepted_media_type", ""))
    return '"' + hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest() + '"'


def _decorate(response: HttpResponse, tag: str) -> HttpResponse:
    response["ETag"] = tag
    response["Cache-Control"] = "private, no-cache"
    patch_vary_headers(response, ("Accept", "Authorization", "Cookie"))
    return response


def _matches(request: Request, tag: str) -> bool:
    """Whether ``If-None-Match`` names ``tag`` (``*`` is judged after the view: see ``conditional``)."""
    header = request.META.get("HTTP_IF_NONE_MATCH")
    if not header:
        return False
    tags = parse_etags(header)
    return tag in tags or f"W/{tag}" in tags


def _any_tag(request: Request) -> bool:
    return "*" in parse_etags(request.META.get("HTTP_IF_NONE_MATCH") or "")


_Handler = Callable[..., Response]


def conditional(*, scope: str, depends: str = "all", market: str = "default") -> Callable[[_Handler], Callable[..., HttpResponse]]:
    """Decorate a DRF ``get`` (or ``list``) method: ETag, 304 and, for ``scope="market"``, a shared body cache.

    ``market="default"``: the view shows the first market (``market.selectors.market_default``);
    ``"tenant"``: the caller's own market (``request.user.tenant.market_id``; no tag without a tenant).
    """
    if scope not in ("market", "user") or depends not in DEPENDS or market not in ("default", "tenant"):
        raise ValueError(f"scope {scope!r} / depends {depends!r} / market {market!r}")
    positions = DEPENDS[depends]

    def decorate(method: _Handler) -> Callable[..., HttpResponse]:
        @wraps(method)
        def wrapper(self: Any, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
            renderer = getattr(request, "accepted_renderer", None)
            if getattr(renderer, "format", None) != "json" or request.method not in ("GET", "HEAD"):
                return method(self, request, *args, **kwargs)
            if market == "tenant":
                tenant = getattr(request.user, "tenant", None)
                marks = market_marks(tenant.market_id) if tenant is not None else None
            else:
                marks = market_marks()
            if marks is None:
                return method(self, request, *args, **kwargs)
            request.market_marks = marks  # the view reads its market from them (marked_market): one query fewer
            tag = etag_for(request, tuple(marks[i] for i in positions), scope)
            if _matches(request, tag):
                return _decorate(HttpResponseNotModified(), tag)
            content_type = renderer.media_type
            if scope == "market":
                body = LOCAL.get(tag)
                if body is None:
                    body = cache_get(f"resp:{tag}")
                    if body is not None:
                        LOCAL.put(tag, body)
                if body is not None:  # a body is cached only for a 200
                    if _any_tag(request):
                        return _decorate(HttpResponseNotModified(), tag)
                    return _decorate(HttpResponse(body, content_type=content_type), tag)
            response = method(self, request, *args, **kwargs)
            if response.status_code != 200 or not isinstance(response, Response):
                return response  # an invalid query is a 400 whatever If-None-Match says
            if _any_tag(request):  # "*": any current answer matches, once the request is known to have one
                return _decorate(HttpResponseNotModified(), tag)
            response.accepted_renderer = renderer
            response.accepted_media_type = request.accepted_media_type
            response.renderer_context = self.get_renderer_context()
            body = response.rendered_content
            if scope == "market":
                LOCAL.put(tag, body)
                cache_set(f"resp:{tag}", body, CACHE_S)
            out = HttpResponse(body, content_type=content_type)
            for header, value in response.items():
                if header.lower() != "content-type":
                    out[header] = value
            return _decorate(out, tag)

        wrapper.etag = True  # type: ignore[attr-defined]  # the schema documents If-None-Match, ETag and 304 (api.operations)
        return wrapper

    return decorate
