"""The Celery application.

Tasks derive from ``celery.contrib.django.task.DjangoTask`` so that services can
enqueue with ``delay_on_commit``: the worker then never reads rows that the
enqueuing transaction has not committed yet.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")

app = Celery("marketplace", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["marketplace"])
