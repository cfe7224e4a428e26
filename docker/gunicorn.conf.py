"""Gunicorn settings for the web service (docker compose and `make load`).

Sync workers with threads: Django views are blocking and spend most of their
time in PostgreSQL, so a few processes x a few threads keep the cores busy.
Everything can be overridden by the usual GUNICORN_* style flags or env below.
"""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() + 1))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
worker_class = "gthread"
timeout = 30  # a request longer than this is killed (the clearing runs in Celery, not here)
graceful_timeout = 20
keepalive = 5
max_requests = 5000  # recycle workers now and then (bounded memory growth)
max_requests_jitter = 500
accesslog = os.environ.get("GUNICORN_ACCESSLOG")  # unset: no access log (the load test's default)
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
