"""The Celery application; settings come from Django's ``CELERY_*`` settings."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("consultations")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
