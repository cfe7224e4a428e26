"""Request guards: malformed input is a 4xx JSON error naming what is wrong, never a 500.

* NUL characters in the query string: PostgreSQL refuses them in any string
  literal ("A string literal cannot contain NUL"), so ``?resource=%00`` used to
  reach the database and answer 500. They are refused here, for every route,
  with ``400 {"<parameter>": ["Null characters are not allowed."]}``.
* Bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE``: ``413 {"body": [...]}`` (JSON,
  not Django's HTML 400 page), checked on ``Content-Length`` before anything
  reads the body, and again if a chunked body trips Django's own limit.
* A body sent with ``Transfer-Encoding: chunked`` and no ``Content-Length``:
  Django's WSGI request reads ``Content-Length`` bytes, so such a body arrives
  empty, and a bid used to get a confusing "budget is required". It is refused
  with ``411 {"body": [...]}`` (Length Required, RFC 9110, Sec. 15.5.12).

The body checks apply to the methods that carry one (not GET, HEAD, OPTIONS: their bodies are
never read).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import csp.constants
import csp.middleware
import csp.utils
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.urls import Resolver404, resolve

from marketplace.web.text import BIDI_CONTROLS, inert

NULL_MESSAGE = "Null characters are not allowed."
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
CHUNKED_MESSAGE = "Send the body with a Content-Length header; chunked transfer encoding is not supported."


def body_too_big(limit: int, size: int | None = None) -> JsonResponse:
    """The 413 answer for a body over ``limit`` bytes (``size`` when known)."""
    what = f"The request body ({size} bytes)" if size is not None else "The request body"
    return JsonResponse({"body": [f"{what} exceeds the limit of {limit} bytes."]}, status=413)


BodyLimit = Callable[[], int]
TooBig = Callable[[HttpRequest, int, int], HttpResponse]


def allows_body(limit: BodyLimit, *, too_big: TooBig | None = None) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Let a view take bodies up to ``limit()`` bytes (an upload form) instead of
    ``DATA_UPLOAD_MAX_MEMORY_SIZE``; a larger one is answered by ``too_big(request, limit, size)``
    (the form's page with the error), before anything reads it. The outermost decorator."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        view.body_limit = limit  # type: ignore[attr-defined]
        view.body_too_big = too_big  # type: ignore[attr-defined]
        return view

    return decorate


class RequestGuardMiddleware:
    """Refuse NUL characters in query parameters and oversize bodies before any view runs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if "%00" in query or "\x00" in query:
            bad = sorted({k for k, values in request.GET.lists() if "\x00" in k or any("\x00" in v for v in values)})
            return JsonResponse({(k.replace("\x00", "\\x00") or "query"): [NULL_MESSAGE] for k in bad} or {"query": [NULL_MESSAGE]},
                                status=400)
        if request.method in SAFE_METHODS:  # no body is read: nothing to refuse (the API documents 411/413 on writes only)
            return self.get_response(request)
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower() and not request.META.get("CONTENT_LENGTH"):
            return JsonResponse({"body": [CHUNKED_MESSAGE]}, status=411)
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"body": ["Content-Length is not a number."]}, status=400)
        largest = max(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0, int(settings.SIMULATION_UPLOAD_MAX_BYTES) + 2**20)  # the upload form's
        if settings.DATA_UPLOAD_MAX_MEMORY_SIZE is not None and size > largest and not self._answers_itself(request):
            return body_too_big(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, size)  # over every view's limit: no need to go further
        return self.get_response(request)

    @staticmethod
    def _answers_itself(request: HttpRequest) -> bool:
        """The view this path routes to answers a body over its limit with its own page (the upload
        form): :meth:`process_view` refuses it there, still unread, once the user is known."""
        try:
            view = resolve(request.path_info).func
        except Resolver404:
            return False
        return getattr(view, "body_too_big", None) is not None

    def process_view(self, request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: Any) -> HttpResponse | None:
        """The body limit of the view that will read it (``allows_body``), before any middleware reads it (CSRF does)."""
        size = int(request.META.get("CONTENT_LENGTH") or 0)
        custom = getattr(view, "body_limit", None)
        limit = custom() if custom is not None else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is None or size <= limit:
            return None
        too_big = getattr(view, "body_too_big", None)
        return too_big(request, limit, size) if too_big is not None else body_too_big(limit, size)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, RequestDataTooBig):  # a body Django's own limit refused while reading it
            return body_too_big(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return None


UNSAFE = ("POST", "PUT", "PATCH", "DELETE")


class FormWriteLimitMiddleware:
    """The pages' forms count against the API's write limit (``THROTTLE_WRITES`` per user):
    one counter for a bid, cancel, quote, accept, booking or study, whether it came from a
    form or from ``/api/`` (whose views DRF's ``WriteRateThrottle`` guards). Over it, a 429
    page with ``Retry-After``. Anonymous posts (the login form) have their own limit."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in UNSAFE and not request.path.startswith("/api/") and request.user.is_authenticated:
            from django.template.loader import render_to_string

            from marketplace.web.throttling import WriteRateThrottle

            throttle = WriteRateThrottle()
            if not throttle.allow_request(request, None):  # type: ignore[arg-type]  # reads .user, .method and META only
                wait = int(throttle.wait())
                body = render_to_string("429.html", {"wait": wait}, request=request)
                response = HttpResponse(body, status=429)
                response["Retry-After"] = str(wait)
                return response
        return self.get_response(request)


class InertBidiMiddleware:
    """Right-to-left overrides and other bidirectional controls in a page's text (job names,
    memos, titles) are shown as ``[U+202E]`` (``web.text.inert``), so a name cannot reverse how
    the text around it reads. HTML answers only; the charts' JSON escapes its labels itself."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.streaming or not response.get("Content-Type", "").startswith("text/html"):
            return response
        text = response.content.decode(response.charset or "utf-8", errors="replace")
        if BIDI_CONTROLS.search(text):
            response.content = inert(text).encode(response.charset or "utf-8")
        return response


_PER_RESPONSE_POLICY = ("_csp_config", "_csp_update", "_csp_replace", "_csp_config_ro", "_csp_update_ro", "_csp_replace_ro")


class CSPMiddleware(csp.middleware.CSPMiddleware):
    """django-csp's middleware, with the site's policy built once instead of on every response.

    django-csp builds both headers (the policy and the report-only one) from the settings for every
    response, the same strings each time unless a view changed the policy (``csp_update`` and the like,
    the API docs pages) or a page used a nonce. Those responses still go through django-csp; the others
    get the strings built on first use (again whenever the settings object changes: tests override it)."""

    _built: tuple[object, object, str, str] | None = None

    def _policies(self) -> tuple[str, str]:
        conf = getattr(settings, "CONTENT_SECURITY_POLICY", None)
        report_only = getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None)
        built = self._built
        if built is None or built[0] is not conf or built[1] is not report_only:
            built = self._built = (conf, report_only, csp.utils.build_policy(), csp.utils.build_policy(report_only=True))
        return built[2], built[3]

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if getattr(request, "_csp_nonce", None) is not None or any(getattr(response, a, None) is not None for a in _PER_RESPONSE_POLICY):
            return super().process_response(request, response)
        if response.status_code in (500, 404) and settings.DEBUG:  # django-csp leaves the debug pages alone
            return response
        policy, report_only = self._policies()
        for header, value, exempt, setting in ((csp.constants.HEADER, policy, "_csp_exempt", "CONTENT_SECURITY_POLICY"),
                                               (csp.constants.HEADER_REPORT_ONLY, report_only, "_csp_exempt_ro",
                                                "CONTENT_SECURITY_POLICY_REPORT_ONLY")):
            prefixes = tuple((getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES", None) or ())
            exempted = getattr(response, exempt, False) is not False or request.path_info.startswith(prefixes)
            if value and header not in response and not exempted:
                response[header] = value
        # as django-csp: a nonce asked for after the header was written is an error, not a silent no-op
        request.csp_nonce = csp.middleware.CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response
