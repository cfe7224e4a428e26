"""Routes of ERA reservations (paper 001): the quote flow, the public price page, the cluster-facing API."""

from django.urls import path

from marketplace.reservations import api, views

urlpatterns = [
    path("reservations/", views.reservation_list, name="reservation-list"),
    path("reservations/new/", views.reservation_new, name="reservation-new"),
    path("reservations/quotes/<int:pk>/", views.reservation_quote_view, name="reservation-quote"),
    path("reservations/quotes/<int:pk>/<str:action>/", views.reservation_quote_action, name="reservation-quote-action"),
    path("reservations/market/", views.reservation_market, name="reservation-market"),
]

api_urlpatterns = [
    path("reservations/", api.ReservationListView.as_view(), name="api-reservations"),
    path("reservations/<int:pk>/", api.ReservationDetailView.as_view(), name="api-reservation"),
    path("reservations/quotes/", api.QuoteListView.as_view(), name="api-quotes"),
    path("reservations/quotes/<int:pk>/", api.QuoteDetailView.as_view(), name="api-quote"),
    path("reservations/quotes/<int:pk>/accept/", api.QuoteAcceptView.as_view(), name="api-quote-accept"),
    path("reservations/quotes/<int:pk>/decline/", api.QuoteDeclineView.as_view(), name="api-quote-decline"),
    path("reservations/request/", api.RequestView.as_view(), name="api-reservation-request"),
    path("reservations/prices/", api.PriceCurveView.as_view(), name="api-reservation-prices"),
    path("cluster/allocation/", api.ClusterAllocationView.as_view(), name="api-cluster-allocation"),
    path("cluster/update/", api.ClusterUpdateView.as_view(), name="api-cluster-update"),
]
