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
max_requests = 20000  # recycle workers now and then (bounded memory growth); a restart costs seconds of CPU (imports)
max_requests_jitter = 500
accesslog = os.environ.get("GUNICORN_ACCESSLOG")  # unset: no access log (the load test's default)
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")

# Profiling a load run: with GUNICORN_PROFILE_DIR set, every request is profiled (cProfile on the
# handling thread's own CPU time, so waiting is not counted) and each worker writes its profiles
# there as <pid>-<n>.prof when it exits (`bench/load.sh` stops gunicorn at the end). Read them with
# `python -c "import pstats, glob; pstats.Stats(*glob.glob('DIR/*.prof')).sort_stats('tottime').print_stats(40)"`.
_PROFILE_DIR = os.environ.get("GUNICORN_PROFILE_DIR")
if _PROFILE_DIR:
    import cProfile
    import threading
    import time

    _profiles: list = []
    _local = threading.local()

    def pre_request(worker, req):  # type: ignore[no-untyped-def]
        prof = getattr(_local, "profile", None)
        if prof is None:
            prof = _local.profile = cProfile.Profile(time.thread_time)
            _profiles.append(prof)
        prof.enable()

    def post_request(worker, req, environ, resp):  # type: ignore[no-untyped-def]
        _local.profile.disable()

    def worker_exit(server, worker):  # type: ignore[no-untyped-def]
        for n, prof in enumerate(_profiles):
            prof.dump_stats(os.path.join(_PROFILE_DIR, f"{worker.pid}-{n}.prof"))

# The GIL's switch interval in each worker (seconds; Python's default is 0.005). A thread that
# comes back from a database round trip waits up to this long for the GIL while the worker's
# other threads run Python; inside a transaction that holds the market row, that wait
# lengthens every other writer's wait too.
_SWITCH_INTERVAL = os.environ.get("GUNICORN_SWITCH_INTERVAL")
if _SWITCH_INTERVAL:
    import sys as _sys

    def post_worker_init(worker):  # type: ignore[no-untyped-def]
        _sys.setswitchinterval(float(_SWITCH_INTERVAL))
