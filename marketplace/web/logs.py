"""Logging filters.

An expected refusal is not an error: Django logs a ``PermissionDenied`` (403) with its
traceback (``django.utils.log.log_response(..., exception=exc)``), which buries real
errors under stacks of "you may not open this page". :class:`ExpectedRefusals` keeps the
record, one line ("Forbidden (Permission denied): /market/settings/"), and drops the
traceback. DRF's 403s are logged by Django's handler as one line already; the filter
makes that hold whatever raised them. 5xx records keep their tracebacks.
"""

from __future__ import annotations

import logging

ONE_LINE_STATUSES = frozenset({401, 403, 404})


class ExpectedRefusals(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) in ONE_LINE_STATUSES:
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        return True
