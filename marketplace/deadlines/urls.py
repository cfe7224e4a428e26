"""Routes of deadline quotes and bookings (paper 003)."""

from django.urls import path

from marketplace.deadlines import api, views

urlpatterns = [
    path("deadline/", views.deadline_page, name="deadline-quote"),
]

api_urlpatterns = [
    path("deadline/quote/", api.DeadlineQuoteView.as_view(), name="api-deadline-quote"),
    path("deadline/book/", api.DeadlineBookView.as_view(), name="api-deadline-book"),
]
