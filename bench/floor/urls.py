"""Trivial endpoints that measure the web stack itself, then every route of the site (``marketplace.urls``).

Each goes through the project's whole middleware stack (``settings.MIDDLEWARE``):

  /floor/plain/           a Django view: a small JsonResponse, no database
  /floor/row/<pk>/        the same plus one primary-key SELECT of a market row: the ORM's
                          ``Market.objects.only(...).get(pk=...)`` of the four fields it answers
  /floor/drf/             a DRF APIView under the same settings as the next, answering the small fixed body:
                          DRF's own cost (dispatch, authentication, permissions, throttles, renderer), no database
  /floor/drf/<pk>/        a DRF APIView with the project's REST_FRAMEWORK settings (token authentication,
                          IsAuthenticated, the three throttles, the orjson renderer and its negotiation):
                          the same row through a ModelSerializer

The answers are fixed by the row (:func:`expected`), so the load generator checks every body.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace.market.models.market import Market
from marketplace.urls import handler404
from marketplace.urls import urlpatterns as site_urlpatterns

PLAIN = {"floor": "plain", "ok": True}
FIELDS = ("id", "name", "mechanism", "clock_speed")


def expected(market: Market) -> dict[str, dict[str, Any]]:
    """The body each floor endpoint answers for ``market``, by endpoint name ("plain", "row", "drfconst", "drf")."""
    row = {f: getattr(market, f) for f in FIELDS}
    return {"plain": PLAIN, "row": row, "drfconst": PLAIN, "drf": row}


def plain(request: HttpRequest) -> JsonResponse:
    return JsonResponse(PLAIN)


def row(request: HttpRequest, pk: int) -> JsonResponse:
    market = Market.objects.only(*FIELDS).get(pk=pk)
    return JsonResponse({f: getattr(market, f) for f in FIELDS})


class MarketRowSerializer(serializers.ModelSerializer):
    class Meta:
        model = Market
        fields = FIELDS


class ConstView(APIView):
    """The fixed body, under the API's default authentication, permissions and throttles."""

    def get(self, request: Request) -> Response:
        return Response(PLAIN)


class RowView(APIView):
    """One market row, serialized, under the API's default authentication, permissions and throttles."""

    def get(self, request: Request, pk: int) -> Response:
        return Response(MarketRowSerializer(Market.objects.only(*FIELDS).get(pk=pk)).data)


urlpatterns = [
    path("floor/plain/", plain),
    path("floor/row/<int:pk>/", row),
    path("floor/drf/", ConstView.as_view()),
    path("floor/drf/<int:pk>/", RowView.as_view()),
    *site_urlpatterns,
]

__all__ = ["handler404", "urlpatterns"]
