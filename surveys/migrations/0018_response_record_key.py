"""The cell-key method's record key on every response (issue 26).

A plain ``ALTER TABLE ... ADD COLUMN`` (nullable, no default: SQLite does not rebuild
the table), then every existing response gets its key: one ``UPDATE`` with the
database's random numbers on PostgreSQL (``random()`` is seeded from the operating
system's entropy per backend), batches of keys from ``secrets`` elsewhere. New responses
get theirs in the insert that stores them (``surveys/ingest.py``).
"""

from django.db import migrations, models


def backfill(apps, schema_editor):
    from privacy.mechanisms.cellkey import new_record_keys

    connection = schema_editor.connection
    table = apps.get_model("surveys", "Response")._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"UPDATE {table} SET record_key = floor(random() * 4294967296)::bigint "
                "WHERE record_key IS NULL"
            )
            return
        while True:
            cursor.execute(f"SELECT id FROM {table} WHERE record_key IS NULL LIMIT 10000")
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return
            cursor.executemany(
                f"UPDATE {table} SET record_key = %s WHERE id = %s",
                list(zip(new_record_keys(len(ids)), ids, strict=True)),
            )


class Migration(migrations.Migration):
    dependencies = [
        ("surveys", "0017_response_withdrawn_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="response",
            name="record_key",
            field=models.BigIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
