"""The Celery application; settings come from Django's ``CELERY_*`` settings."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("consultations")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def preload(**_: object) -> None:
    """Import in the worker's main process, before its pool forks, what the first report
    would otherwise import on its analyst's time: matplotlib (charts), pandas and
    openpyxl (the report's CSV through reconstruction.exports), 1-2 s on a cold
    process. The pool's processes share the pages."""
    import django

    django.setup()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.backends.backend_agg
    import matplotlib.figure

    import reconstruction.exports
    import reconstruction.presentation  # noqa: F401
