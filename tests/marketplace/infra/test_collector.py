"""A web worker settles what start-up loaded out of the collector's full passes (infra.collector.settle)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_importing_the_wsgi_application_freezes_what_start_up_loaded():
    probe = (
        "import gc\n"
        "import marketplace.wsgi\n"
        "print(gc.get_freeze_count(), len(gc.get_objects()))\n"
    )
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="marketplace.settings", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
    frozen, left = out.stdout.split()
    # the app's objects (tens of thousands) are frozen; what the collector still walks is a small part of them
    assert int(frozen) > 20_000 and int(left) < int(frozen) / 5, out.stdout


def test_a_celery_pool_process_and_a_ready_worker_settle_what_they_loaded():
    probe = (
        "import gc\n"
        "import django; django.setup()\n"
        "from celery.signals import worker_process_init, worker_ready\n"
        "import marketplace.celery\n"
        "before = gc.get_freeze_count()\n"
        "worker_process_init.send(sender=None)\n"
        "after_fork = gc.get_freeze_count(); gc.unfreeze()\n"
        "worker_ready.send(sender=None)\n"
        "print(before, after_fork, gc.get_freeze_count())\n"
    )
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="marketplace.settings", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
    before, after_fork, after_ready = (int(x) for x in out.stdout.split())
    assert before == 0 and after_fork > 20_000 and after_ready > 20_000, out.stdout
