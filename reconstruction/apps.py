from collections.abc import Mapping
from typing import Any

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ReconstructionConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reconstruction"
    verbose_name = _("Reconstruction")

    #: The analysis kinds by name (the registry's live mapping), read by
    #: ``AnalysisJob.clean``: the registry imports the models, so they do not import it.
    analysis_kinds: Mapping[str, Any] = {}

    def ready(self) -> None:
        from django.conf import settings
        from django.core.signals import request_started

        from reconstruction import registry

        self.analysis_kinds = registry.KINDS
        if settings.CELERY_TASK_ALWAYS_EAGER:
            # The embedded default has no worker to start: its process's first request
            # re-queues what a dead one left running or queued (jobs_requeue_all_stuck).
            request_started.connect(requeue_on_start, dispatch_uid="requeue-on-start")


def requeue_on_start(**_: object) -> None:
    """Once per process (the embedded default): run again the jobs a dead process left."""
    import logging

    from django.core.signals import request_started

    from reconstruction import jobs

    try:
        count = jobs.jobs_requeue_all_stuck()
    except Exception:  # never fail a request over it; tried again on the next one
        logging.getLogger(__name__).warning("re-queuing stale jobs failed", exc_info=True)
        return
    request_started.disconnect(dispatch_uid="requeue-on-start")
    if count:
        logging.getLogger(__name__).warning("re-queued %s stale jobs at start-up", count)
