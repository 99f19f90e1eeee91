"""surveys/maintenance.py without PostgreSQL: the debounce arithmetic, and that the
embedded default (SQLite) queues nothing. tests/integration/test_statistics_maintenance.py
shows the real worker vacuuming after a large ingest."""

from __future__ import annotations

from django.core.cache import cache

from surveys import maintenance
from tests.factories import good_answers


def test_the_vacuum_waits_for_the_ingest_to_pause_but_not_forever(settings) -> None:
    settings.STATISTICS_QUIET_SECONDS = 3
    settings.STATISTICS_LONGEST_WAIT_SECONDS = 600
    cache.set(maintenance._LAST_INGEST, 1000.0)
    assert maintenance.wait_seconds(queued_at=999.0, now=1001.0) == 2.0  # still ingesting
    assert maintenance.wait_seconds(queued_at=999.0, now=1003.5) == 0.0  # paused: run
    # An ingest that never pauses: run anyway once it has waited the longest.
    cache.set(maintenance._LAST_INGEST, 1599.0)
    assert maintenance.wait_seconds(queued_at=999.0, now=1600.0) == 0.0
    cache.delete(maintenance._LAST_INGEST)
    assert maintenance.wait_seconds(queued_at=999.0, now=1000.0) == 0.0


def test_sqlite_needs_no_vacuum_and_queues_none(survey, tenant, settings) -> None:
    settings.STATISTICS_VACUUM_AFTER_ANSWERS = 1
    created = tenant.portal.post(
        f"/api/v1/surveys/{survey.pk}/responses/bulk/",
        {"responses": [{"participant": f"m-{i}", "answers": good_answers(i)} for i in range(3)]},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert cache.get(maintenance._QUEUED) is None
    assert maintenance.statistics_tables_vacuum() == []
