"""The project's settings (``marketplace.settings``, read from the same environment) with one change:
the URLconf is :mod:`bench.floor.urls`, the site's routes behind a few trivial endpoints.

Select it with ``DJANGO_SETTINGS_MODULE=bench.floor.settings`` (``bench/stack_floor.py`` does)."""

from marketplace.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor.urls"
