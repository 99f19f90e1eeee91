"""Which database an analysis reads: the ``replica`` alias when configured, unless the
job under way was pinned to the primary, and how far a standby has replayed the primary.

Re-exported by :mod:`surveys.statistics`, whose reads go to :func:`analysis_alias`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import connections

_READ_FROM: ContextVar[str | None] = ContextVar("analysis_read_from", default=None)


def analysis_alias() -> str:
    """The database analyses read: ``replica`` when configured (DATABASE_REPLICA_URL),
    unless the job under way was pinned to the primary (:func:`reading_from`)."""
    from django.conf import settings

    pinned = _READ_FROM.get()
    if pinned is not None:
        return pinned
    return "replica" if "replica" in settings.DATABASES else "default"


@contextmanager
def reading_from(alias: str) -> Iterator[None]:
    """Within the block, :func:`analysis_alias` is ``alias`` (a job's consistent choice)."""
    token = _READ_FROM.set(alias)
    try:
        yield
    finally:
        _READ_FROM.reset(token)


def primary_wal_position() -> str:
    """The primary's current WAL insert position (``pg_current_wal_insert_lsn()``) as
    text, or ``""`` where there is none (SQLite). Everything committed before the call
    lies at or before it, so a standby that has replayed it has the caller's earlier writes.

    Not ``pg_current_wal_lsn()``, the position written so far: with asynchronous commit
    (``synchronous_commit = off``) a commit returns before the WAL writer has written its
    record, so a standby could have replayed that position without the commit and a job
    would read a standby that lacks the residents submitted just before it."""
    if connections["default"].vendor != "postgresql":
        return ""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        (position,) = cursor.fetchone()
    return str(position)


def replica_has_replayed(position: str, *, wait_seconds: float, poll_seconds: float = 0.05) -> bool:
    """Wait until the ``replica`` alias has replayed the primary's WAL up to ``position``
    (``pg_last_wal_replay_lsn()``), for at most ``wait_seconds``; True once it has.

    A ``replica`` that is not a standby (``pg_is_in_recovery()`` false: the same cluster
    under a second alias) has everything. A replica that cannot be reached has nothing:
    the caller reads the primary instead.
    """
    import logging
    import time

    from django.db import DatabaseError

    if not position or "replica" not in connections.settings:
        return True
    deadline = time.monotonic() + max(0.0, wait_seconds)
    try:
        with connections["replica"].cursor() as cursor:
            while True:
                cursor.execute(
                    "SELECT COALESCE(pg_last_wal_replay_lsn() >= %s::pg_lsn, "
                    "NOT pg_is_in_recovery())",
                    [position],
                )
                (replayed,) = cursor.fetchone()
                if replayed:
                    return True
                if time.monotonic() >= deadline:
                    return False
                time.sleep(poll_seconds)
    except DatabaseError:
        logging.getLogger(__name__).warning(
            "the replica could not be asked how far it has replayed; reading the primary",
            exc_info=True,
        )
        connections["replica"].close()
        return False
