"""The statistics tables stay fit for index-only scans without an operator's VACUUM
(issue 24, "Figures as users meet them"; surveys/maintenance.py): their autovacuum settings
are in place, and a large bulk ingest makes the real worker vacuum and analyse them."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from django.db import connection

from surveys import maintenance
from tests.factories import consultation_factory, good_answers, survey_factory, tenant_factory
from tests.servers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

API = "/api/v1/"


def _table_state(table: str) -> tuple[int, int, int]:
    """(manual vacuums, manual analyses, pages marked all-visible) of ``table``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.vacuum_count, s.analyze_count, c.relallvisible "
            "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
            "WHERE s.relname = %s",
            [table],
        )
        row = cursor.fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def test_the_statistics_tables_autovacuum_after_one_percent_of_inserts() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relname = ANY(%s)",
            [list(maintenance.TABLES)],
        )
        options = {name: set(values or []) for name, values in cursor.fetchall()}
    assert set(options) == set(maintenance.TABLES)
    for table in maintenance.TABLES:
        assert {
            "autovacuum_vacuum_insert_scale_factor=0.01",
            "autovacuum_vacuum_insert_threshold=10000",
            "autovacuum_analyze_scale_factor=0.01",
            "autovacuum_analyze_threshold=10000",
        } <= options[table], (table, options[table])


def test_a_large_bulk_ingest_has_the_worker_vacuum_and_analyse_the_tables(
    celery_worker_process: Worker, settings
) -> None:
    # A "large" ingest made small: 2 requests of 1,000 responses (8 answers each).
    settings.STATISTICS_VACUUM_AFTER_ANSWERS = 12_000
    for key in (maintenance._PENDING, maintenance._QUEUED, maintenance._LAST_INGEST):
        cache.delete(key)
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation, title="Register"))
    before = _table_state("surveys_answer")
    for first in (0, 1000):
        created = tenant.analyst.post(  # bulks above 100: a server-side key
            f"{API}surveys/{survey.pk}/responses/bulk/",
            {
                "responses": [
                    {"participant": f"r-{i}", "answers": good_answers(i)}
                    for i in range(first, first + 1000)
                ]
            },
            format="json",
        )
        assert created.status_code == 201, created.content
        if first == 0:  # 8,000 answers: below the threshold, nothing queued yet
            assert cache.get(maintenance._QUEUED) is None
    assert cache.get(maintenance._QUEUED) is not None  # 16,000: queued, debounced

    deadline = time.monotonic() + 60
    after = before
    while time.monotonic() < deadline:
        after = _table_state("surveys_answer")
        if after[0] > before[0] and after[1] > before[1]:
            break
        time.sleep(0.5)
    assert after[0] > before[0], "the answers table was not vacuumed"
    assert after[1] > before[1], "the answers table was not analysed"
    # Whether the vacuum could mark the new pages all-visible (after[2]) depends on the
    # oldest snapshot anywhere, the standby's too (hot_standby_feedback): another test
    # holding one back would make that assertion flaky. bench_scale shows the share.
    for table in ("surveys_response", "surveys_participant"):
        assert _table_state(table)[0] > 0, table
    assert "surveys.statistics_tables_vacuum" in celery_worker_process.output()
    assert cache.get(maintenance._QUEUED) is None  # the next large ingest queues again


def test_an_analysis_queued_behind_the_vacuum_does_not_wait_for_it(
    celery_worker_process: Worker,
) -> None:
    """The session's worker serves every lane with one process. The vacuum task runs its
    VACUUM in a thread of its own and returns, so a count queued right after it is
    answered while the vacuum still waits: here for the participants table, whose lock
    another session holds (as a long vacuum of 10^6 answers would hold the worker). On a
    vacuum run in the task itself, the count waits until the lock is released."""
    import psycopg

    from surveys.tasks import statistics_tables_vacuum

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation, title="Queue"))
    created = tenant.analyst.post(
        f"{API}surveys/{survey.pk}/responses/bulk/",
        {"responses": [{"participant": f"q-{i}", "answers": good_answers(i)} for i in range(60)]},
        format="json",
    )
    assert created.status_code == 201, created.content
    before = _table_state("surveys_participant")[0]
    db = connection.settings_dict
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    with psycopg.connect(url) as blocker:  # a transaction holding the vacuum's lock
        blocker.execute("LOCK TABLE surveys_participant IN SHARE UPDATE EXCLUSIVE MODE")
        statistics_tables_vacuum.apply_async()
        asked = tenant.analyst.post(
            f"{API}analyses/",
            {
                "survey": survey.pk,
                "kind": "count",
                "method": "naive",
                "where": [{"attribute": "sex", "op": "in", "value": ["F"]}],
            },
            format="json",
        )
        assert asked.status_code == 202, asked.content
        deadline = time.monotonic() + 60
        job = tenant.analyst.get(asked.json()["url"]).json()
        while job["status"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.2)
            job = tenant.analyst.get(asked.json()["url"]).json()
        assert job["status"] in ("succeeded", "refused"), job
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query ILIKE 'VACUUM%%' "
                "AND wait_event_type = 'Lock'"
            )
            assert cursor.fetchone()[0] == 1  # the vacuum is still waiting for the lock
        blocker.rollback()
    deadline = time.monotonic() + 60
    while _table_state("surveys_participant")[0] == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _table_state("surveys_participant")[0] > before  # and then it ran
