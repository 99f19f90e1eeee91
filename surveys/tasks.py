"""Celery tasks of the surveys app: the statistics tables' vacuum after a large ingest, and
the purge of surveys whose retention period has passed (Celery beat)."""

from __future__ import annotations

from celery import shared_task

from surveys import maintenance


@shared_task(name="surveys.statistics_tables_vacuum", ignore_result=True)
def statistics_tables_vacuum(queued_at: float | None = None) -> None:
    """Wait for the ingest to pause (re-queued while it goes on), then vacuum and analyse
    the statistics tables (:mod:`surveys.maintenance`)."""
    if queued_at is not None:
        wait = maintenance.wait_seconds(queued_at)
        if wait > 0:
            statistics_tables_vacuum.apply_async(kwargs={"queued_at": queued_at}, countdown=wait)
            return
    maintenance.statistics_tables_vacuum(wait=False)  # in a thread: the process is free


@shared_task(name="surveys.purge_expired_surveys", ignore_result=True)
def purge_expired_surveys() -> int:
    """Celery beat: purge the distorted answers of every survey whose retention period
    has passed (:func:`surveys.retention.surveys_purge_due`); returns how many."""
    from surveys import retention

    return len(retention.surveys_purge_due())
