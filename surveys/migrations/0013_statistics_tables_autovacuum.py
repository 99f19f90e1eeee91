"""Autovacuum settings that keep the statistics tables fit for index-only scans.

The statistics read answers through index-only scans (``answer_question_response``), which
skip the heap only on pages the visibility map marks all-visible; VACUUM sets those marks,
ANALYZE the planner's statistics. By default autovacuum reacts to inserts after 20% of a
table (and analyses after 10%), so a table grown by bulk ingests stays unvacuumed for long
stretches. Here it reacts after 1% (at least 10,000 rows) on the answers, responses and
participants tables. After a large ingest the product also queues a vacuum itself
(surveys.maintenance). PostgreSQL only; SQLite has no such settings.
"""

from django.db import migrations

TABLES = ("surveys_answer", "surveys_response", "surveys_participant")
SETTINGS = {
    "autovacuum_vacuum_insert_scale_factor": "0.01",
    "autovacuum_vacuum_insert_threshold": "10000",
    "autovacuum_analyze_scale_factor": "0.01",
    "autovacuum_analyze_threshold": "10000",
}


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    options = ", ".join(f"{name} = {value}" for name, value in SETTINGS.items())
    for table in TABLES:
        schema_editor.execute(f"ALTER TABLE {table} SET ({options})")


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"ALTER TABLE {table} RESET ({', '.join(SETTINGS)})")


class Migration(migrations.Migration):
    dependencies = [("surveys", "0012_question_additive_staircase")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
