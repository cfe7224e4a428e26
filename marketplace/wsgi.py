"""WSGI entry point."""
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from marketplace.infra import collector

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
application = get_wsgi_application()
# The URLconf, and with it every view module, is imported here, as each server process starts,
# instead of in the first request the process serves (about a second of imports that request
# waited for, again after every worker recycle).
get_resolver().url_patterns  # noqa: B018
collector.settle()  # what start-up loaded is out of the collector's full passes (infra.collector)
