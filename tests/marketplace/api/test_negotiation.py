"""The negotiation shortcut picks what DRF's own negotiation picks for the requests it takes (plain
JSON, any type, no Accept), and leaves every other request to DRF; the CSP headers built once are
the ones django-csp builds."""

from __future__ import annotations

import csp.utils
import pytest
from django.test import override_settings
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from marketplace.api.renderers import ContentNegotiation, JSONRenderer

RENDERERS = [JSONRenderer(), BrowsableAPIRenderer()]


@pytest.mark.parametrize(("accept", "query"), [
    (None, ""), ("application/json", ""), ("*/*", ""), ("application/json; indent=4", ""), ("text/html", ""),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", ""), ("application/json", "?format=api"),
    ("*/*", "?format=json"), ("application/*", ""),
])
def test_the_shortcut_answers_as_drfs_negotiation(accept, query):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get(f"/api/market/{query}", **headers))
    assert _outcome(ContentNegotiation(), request) == _outcome(DefaultContentNegotiation(), request)


def _outcome(negotiation: DefaultContentNegotiation, request: Request) -> tuple[object, str]:
    try:
        renderer, media_type = negotiation.select_renderer(request, RENDERERS)
    except NotAcceptable:  # ?format=api with Accept: application/json: DRF's 406, both ways
        return NotAcceptable, ""
    return type(renderer), media_type


def test_a_view_whose_first_renderer_is_not_json_is_left_to_drf():
    request = Request(APIRequestFactory().get("/api/market/", HTTP_ACCEPT="*/*"))
    renderers = [BrowsableAPIRenderer(), JSONRenderer()]
    assert type(ContentNegotiation().select_renderer(request, renderers)[0]) is BrowsableAPIRenderer


@pytest.mark.django_db
def test_the_csp_headers_are_django_csps_and_follow_the_settings(alice_api):
    def directives(value: str) -> set[str]:
        return {part.strip() for part in value.split(";") if part.strip()}

    resp = alice_api.get("/api/account/")
    assert directives(resp["Content-Security-Policy"]) == directives(csp.utils.build_policy())
    policy = {"DIRECTIVES": {"default-src": ["'none'"]}}
    with override_settings(CONTENT_SECURITY_POLICY=policy, CONTENT_SECURITY_POLICY_REPORT_ONLY=policy):
        resp = alice_api.get("/api/account/")
        assert directives(resp["Content-Security-Policy"]) == directives(csp.utils.build_policy()) >= {"default-src 'none'"}
        assert "Content-Security-Policy-Report-Only" in resp
