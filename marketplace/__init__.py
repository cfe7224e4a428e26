"""Django project and app of the cluster marketplace: the only code that touches the ORM."""

from marketplace.celery import app as celery_app

__all__ = ("celery_app",)
