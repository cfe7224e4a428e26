"""The Celery application.

Tasks derive from ``celery.contrib.django.task.DjangoTask`` so that services can
enqueue with ``delay_on_commit``: the worker then never reads rows that the
enqueuing transaction has not committed yet.
"""

import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

from marketplace.infra import collector

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")

app = Celery("marketplace", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["marketplace"])


@worker_process_init.connect
def _settle_pool_process(**_: object) -> None:
    """A prefork pool process, once forked from the worker that loaded the app: what it inherited is out
    of the collector's full passes (``marketplace.infra.collector.settle``), as in a web worker."""
    collector.settle()


@worker_ready.connect
def _settle_worker(**_: object) -> None:
    """The worker itself, once ready (with ``--pool=solo`` it runs the tasks): as :func:`_settle_pool_process`."""
    collector.settle()
