"""Database routing: writes and migrations on ``default``; analyses may read a replica.

With ``DATABASE_REPLICA_URL`` set, a ``replica`` alias exists and the analysis
statistics (:func:`surveys.statistics.analysis_alias`) read from it explicitly; every
other read stays on ``default`` so a request always sees its own writes.
"""

from __future__ import annotations

from typing import Any


class PrimaryReplicaRouter:
    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return None  # default; analyses choose the replica with using=

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return "default"

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the same data on both aliases

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == "default"
