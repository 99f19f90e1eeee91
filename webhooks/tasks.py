"""Celery task: one delivery attempt per run; retries with exponential backoff.

Routed to the ``webhooks`` lane (config/settings.py) under that lane's time limits.
"""

from __future__ import annotations

from celery import Task, shared_task

from webhooks import services


@shared_task(bind=True, name=services.DELIVER, max_retries=services.MAX_ATTEMPTS - 1)
def deliver(self: Task, delivery_id: int) -> None:
    outcome = services.delivery_attempt(delivery_id)
    if outcome is not False:
        return
    if self.request.retries >= services.MAX_ATTEMPTS - 1:
        services.delivery_give_up(delivery_id)
        return
    raise self.retry(countdown=services.backoff_seconds(self.request.retries))
