"""Responses' and participants' references checked once per statement (PostgreSQL).

Migration 0007 did this for answers. A bulk batch of 10,000 responses still ran 30,000
per-row foreign-key checks at commit: each response's survey and participant, each
new participant's consultation. The same statement-level checks replace them:

* child INSERT / UPDATE (``surveys_response``, ``surveys_participant``): every distinct
  referenced key exists, locked ``FOR KEY SHARE`` as a foreign key's check locks it;
* parent DELETE / UPDATE (``surveys_survey``, ``surveys_participant``,
  ``consultations_consultation``): no row is left referring to a key that is gone.

A violation raises SQLSTATE 23503 (foreign_key_violation), an ``IntegrityError``. The
checks run at the end of each statement (not deferred to commit): rows must be written
after what they refer to and deleted before it, as every writer and Django's cascades
do. SQLite keeps its foreign keys; the models say ``db_constraint=False`` because on
PostgreSQL the integrity is these triggers' job.
"""

import django.db.models.deletion
from django.db import migrations, models

# (child table, child column, parent table, parent column, constraint name)
_KEYS = [
    ("surveys_response", "survey_id", "surveys_survey", "id", "response_survey_exists"),
    (
        "surveys_response",
        "participant_id",
        "surveys_participant",
        "id",
        "response_participant_exists",
    ),
    (
        "surveys_participant",
        "consultation_id",
        "consultations_consultation",
        "id",
        "participant_consultation_exists",
    ),
]


def _child_function(child: str, column: str, parent: str, key: str, name: str) -> str:
    return f"""
CREATE FUNCTION {name}_on_write() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    wanted bigint;
    found bigint;
BEGIN
    SELECT count(*), count(locked.{key}) INTO wanted, found
    FROM (SELECT DISTINCT {column} FROM new_rows) AS ref
    LEFT JOIN LATERAL (
        SELECT p.{key} FROM {parent} p WHERE p.{key} = ref.{column} FOR KEY SHARE OF p
    ) AS locked ON true;
    IF found < wanted THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = format('%s row(s) of {child} refer to a missing {parent} row',
                             wanted - found),
            TABLE = '{child}', CONSTRAINT = '{name}';
    END IF;
    RETURN NULL;
END
$$
"""


def _parent_function(child: str, column: str, parent: str, key: str, name: str) -> str:
    return f"""
CREATE FUNCTION {name}_on_parent_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM old_rows o
        WHERE NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.{key} = o.{key})
          AND EXISTS (SELECT 1 FROM {child} c WHERE c.{column} = o.{key})
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = 'rows of {child} still refer to this {parent} row',
            TABLE = '{parent}', CONSTRAINT = '{name}';
    END IF;
    RETURN NULL;
END
$$
"""


def _trigger(name: str, event: str, table: str, transition: str, function: str) -> str:
    return (
        f"CREATE TRIGGER {name} AFTER {event} ON {table} "
        f"REFERENCING {transition} FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
    )


def _drop_foreign_keys(child: str, column: str) -> str:
    return f"""
    DO $$
    DECLARE name text;
    BEGIN
        FOR name IN
            SELECT c.conname FROM pg_constraint c
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
            WHERE c.conrelid = '{child}'::regclass AND c.contype = 'f'
              AND a.attname = '{column}' AND cardinality(c.conkey) = 1
        LOOP
            EXECUTE format('ALTER TABLE {child} DROP CONSTRAINT %I', name);
        END LOOP;
    END
    $$
    """


_FORWARD: list[str] = []
_BACKWARD: list[str] = []
for _child, _column, _parent, _key, _name in _KEYS:
    _FORWARD += [
        _drop_foreign_keys(_child, _column),
        _child_function(_child, _column, _parent, _key, _name),
        _parent_function(_child, _column, _parent, _key, _name),
    ]
    for _event in ("INSERT", "UPDATE"):
        _FORWARD.append(
            _trigger(
                f"{_name}_on_{_event.lower()}",
                _event,
                _child,
                "NEW TABLE AS new_rows",
                f"{_name}_on_write",
            )
        )
    for _event in ("DELETE", "UPDATE"):
        _FORWARD.append(
            _trigger(
                f"{_name}_on_parent_{_event.lower()}",
                _event,
                _parent,
                "OLD TABLE AS old_rows",
                f"{_name}_on_parent_change",
            )
        )
    _BACKWARD += [
        f"DROP TRIGGER IF EXISTS {_name}_on_insert ON {_child}",
        f"DROP TRIGGER IF EXISTS {_name}_on_update ON {_child}",
        f"DROP TRIGGER IF EXISTS {_name}_on_parent_delete ON {_parent}",
        f"DROP TRIGGER IF EXISTS {_name}_on_parent_update ON {_parent}",
        f"DROP FUNCTION IF EXISTS {_name}_on_write()",
        f"DROP FUNCTION IF EXISTS {_name}_on_parent_change()",
        f"ALTER TABLE {_child} ADD CONSTRAINT {_name}_fk FOREIGN KEY ({_column}) "
        f"REFERENCES {_parent} ({_key}) DEFERRABLE INITIALLY DEFERRED",
    ]


def _run(statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("consultations", "0002_consultation"),
        ("surveys", "0008_answer_covering_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # SQLite keeps its keys (a table rebuild would drop 0002's triggers).
            state_operations=[
                migrations.AlterField(
                    model_name="response",
                    name="survey",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="responses",
                        to="surveys.survey",
                    ),
                ),
                migrations.AlterField(
                    model_name="response",
                    name="participant",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="responses",
                        to="surveys.participant",
                    ),
                ),
                migrations.AlterField(
                    model_name="participant",
                    name="consultation",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="participants",
                        to="consultations.consultation",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(_run(_FORWARD), _run(_BACKWARD))],
        )
    ]
