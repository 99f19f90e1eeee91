"""Keeping the statistics tables fit for index-only scans after a large ingest.

The statistics (:mod:`surveys.statistics`) read answers through index-only scans of the
covering index ``answer_question_response``. PostgreSQL answers from the index alone only
for pages its visibility map marks all-visible, and only ``VACUUM`` sets those marks; the
planner also needs ``ANALYZE``'s statistics of the new rows. Right after a bulk ingest
neither has happened (autovacuum wakes up once a minute, and by default only after 20% new
rows), so the first analyses read every heap page the ingest wrote: at 10^6 participants a
count took 3.3 s instead of 1.3 s (issue 24).

So the product does it itself, in two ways:

- migration ``0013_statistics_tables_autovacuum`` gives the answers, responses and
  participants tables autovacuum settings that react to inserts early (1% of the table,
  at least 10,000 rows, unthrottled), which keeps a steady trickle of submissions
  covered;
- a large ingest (:data:`VACUUM_AFTER_ANSWERS` answers through the bulk API, counted
  across requests) queues :func:`surveys.tasks.statistics_tables_vacuum`, debounced: it
  runs ``VACUUM (ANALYZE)`` once the submissions pause for :data:`QUIET_SECONDS` (at the
  latest :data:`LONGEST_WAIT_SECONDS` after it was queued), so a council that loads its
  register and then asks for a count meets tables that are ready. Closing a survey queues
  it too (no debounce: nothing more will arrive). The task runs the vacuum in a thread of
  its own and returns at once, so the analyses a worker on every lane serves are not
  queued behind it.

``VACUUM`` cannot run inside a transaction: the task runs it on its own autocommit
connection, outside any atomic block. SQLite (the embedded default) has no such need:
nothing is queued there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from surveys.models import Answer, Participant, Response

log = logging.getLogger(__name__)

TABLES: Sequence[str] = (
    Answer._meta.db_table,
    Response._meta.db_table,
    Participant._meta.db_table,
)
"""The tables the statistics and samples read, vacuumed and analysed together."""

VACUUM_AFTER_ANSWERS = 200_000
"""Answers ingested through the bulk API (across requests) that call for a vacuum: about
30,000 participants of a 7-question survey; smaller ingests are left to autovacuum."""

QUIET_SECONDS = 3.0
"""The vacuum waits until no bulk request has stored anything for this long."""

LONGEST_WAIT_SECONDS = 600.0
"""...but not longer than this after it was queued (an ingest that never pauses)."""

_PENDING = "surveys:statistics-vacuum:pending-answers"
_QUEUED = "surveys:statistics-vacuum:queued"
_LAST_INGEST = "surveys:statistics-vacuum:last-ingest"


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, f"STATISTICS_{name}", default))


def answers_ingested(answers: int) -> bool:
    """Count ``answers`` just committed by a bulk ingest. True when the count since the
    last vacuum has reached :data:`VACUUM_AFTER_ANSWERS` and no vacuum is queued yet: the
    caller then queues one (``surveys.services``), debounced by :func:`quiet_seconds`.
    """
    if connection.vendor != "postgresql" or answers <= 0:
        return False
    cache.set(_LAST_INGEST, time.time(), timeout=None)
    cache.add(_PENDING, 0, timeout=None)
    try:
        pending = cache.incr(_PENDING, answers)
    except ValueError:  # evicted between add and incr
        cache.set(_PENDING, answers, timeout=None)
        pending = answers
    if pending < _setting("VACUUM_AFTER_ANSWERS", VACUUM_AFTER_ANSWERS):
        return False
    return _claim()


def survey_closed() -> bool:
    """A survey closed: True when answers were ingested since the last vacuum and none is
    queued; the caller then queues one at once (nothing more will arrive)."""
    if connection.vendor != "postgresql" or not cache.get(_PENDING):
        return False
    return _claim()


def _claim() -> bool:
    """Only one vacuum queued at a time: it will see every answer stored before it runs."""
    return bool(cache.add(_QUEUED, time.time(), timeout=int(LONGEST_WAIT_SECONDS) * 2))


def vacuum_not_queued() -> None:
    """Release the claim of :func:`answers_ingested` / :func:`survey_closed` when the
    caller did not queue the vacuum after all."""
    cache.delete(_QUEUED)


def quiet_seconds() -> float:
    return _setting("QUIET_SECONDS", QUIET_SECONDS)


def wait_seconds(queued_at: float, *, now: float | None = None) -> float:
    """How much longer the queued vacuum should wait for the ingest to pause (0: run)."""
    now = time.time() if now is None else now
    if now - queued_at >= _setting("LONGEST_WAIT_SECONDS", LONGEST_WAIT_SECONDS):
        return 0.0
    last = cache.get(_LAST_INGEST)
    if last is None:
        return 0.0
    return max(0.0, float(last) + quiet_seconds() - now)


def statistics_tables_vacuum(*, wait: bool = True) -> list[str]:
    """``VACUUM (ANALYZE)`` the statistics tables; returns the tables vacuumed.

    Must run outside a transaction (a Celery task, or a management command): VACUUM
    refuses to run inside one. With ``wait=False`` (the Celery task) it runs in a thread
    of its own, on a connection of its own, and this returns at once: the worker's
    process is free for the next task, so an analysis asked right after a large ingest
    is not queued behind a vacuum of every answer (seconds at 10^6 participants) on a
    worker that serves every lane. An interrupted vacuum is harmless (autovacuum's
    settings of migration 0013 cover the tables).
    """
    if connection.vendor != "postgresql":
        return []
    if connection.in_atomic_block:
        raise RuntimeError("VACUUM cannot run inside a transaction")
    # Answers stored from here on count towards the next vacuum.
    cache.delete(_QUEUED)
    cache.set(_PENDING, 0, timeout=None)
    if wait:
        _vacuum()
    else:
        threading.Thread(target=_vacuum_in_thread, name="statistics-vacuum", daemon=True).start()
    return list(TABLES)


def _vacuum() -> None:
    began = time.perf_counter()
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(table)}")
    log.info(
        "statistics tables vacuumed and analysed in %.1f s: %s",
        time.perf_counter() - began,
        ", ".join(TABLES),
    )


def _vacuum_in_thread() -> None:
    """:func:`_vacuum` on this thread's own connection (Django's are per thread), closed
    when done."""
    try:
        _vacuum()
    except Exception:  # a background vacuum that fails leaves the tables to autovacuum
        log.exception("the statistics tables' vacuum failed; autovacuum will do it")
    finally:
        connection.close()
