"""What Django's debug error page may show.

Django's ``SafeExceptionReporterFilter`` hides settings and request variables
whose names match ``API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE``; service
URLs carry credentials (``postgres://user:password@host``,
``redis://:password@host``) under names it does not match: ``DATABASE_URL`` and
``REDIS_URL`` (in ``request.META`` under runserver, which copies the
environment, and as settings), ``CELERY_BROKER_URL``, ``CACHES[...]["LOCATION"]``.
"""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter


class SensitiveSettingsFilter(SafeExceptionReporterFilter):
    """Also hide anything named like a service location: ``*_URL`` (but not ``*STATIC_URL``-like
    path settings, which hold no credentials), ``DATABASE``, ``REDIS``, ``BROKER``, ``BACKEND``, ``LOCATION``."""

    hidden_settings = re.compile(
        r"API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|DATABASE|REDIS|BROKER|RESULT_BACKEND|LOCATION|DSN|_URL$|^URL$",
        flags=re.IGNORECASE,
    )
