"""Bind the ``n_categories`` copied onto answers and calibration pairs to their question.

The check constraints ``0 <= code < n_categories`` on ``surveys_answer`` and
``surveys_calibrationpair`` only mean "the code is one of the question's categories" if
the row's ``n_categories`` equals its question's. The database enforces that:

* PostgreSQL: a composite foreign key ``(question_id, n_categories)`` referencing the
  unique ``(id, n_categories)`` of ``surveys_question``. A continuous question has
  ``n_categories = 0``, so the key also forces a float answer onto a continuous question
  and a code onto a discrete one. A question whose answers exist cannot change its
  ``n_categories`` (the key's ``NO ACTION``).
* SQLite (the embedded default): triggers that do the same check, since SQLite cannot
  add a constraint to an existing table.
"""

from django.db import migrations

_POSTGRES_FORWARD = [
    "ALTER TABLE surveys_answer ADD CONSTRAINT answer_question_n_categories_fk "
    "FOREIGN KEY (question_id, n_categories) REFERENCES surveys_question (id, n_categories) "
    "DEFERRABLE INITIALLY DEFERRED",
    "ALTER TABLE surveys_calibrationpair ADD CONSTRAINT calibration_question_n_categories_fk "
    "FOREIGN KEY (question_id, n_categories) REFERENCES surveys_question (id, n_categories) "
    "DEFERRABLE INITIALLY DEFERRED",
]
_POSTGRES_BACKWARD = [
    "ALTER TABLE surveys_answer DROP CONSTRAINT IF EXISTS answer_question_n_categories_fk",
    "ALTER TABLE surveys_calibrationpair DROP CONSTRAINT IF EXISTS "
    "calibration_question_n_categories_fk",
]


def _sqlite_trigger(table: str, event: str) -> str:
    name = f"{table}_n_categories_{event.split()[0].lower()}"
    return (
        f"CREATE TRIGGER {name} BEFORE {event} ON {table} "
        f"WHEN NEW.n_categories IS NOT "
        f"(SELECT q.n_categories FROM surveys_question q WHERE q.id = NEW.question_id) "
        f"BEGIN SELECT RAISE(ABORT, "
        f"'CHECK constraint failed: {table} n_categories must equal its question''s'); END"
    )


_SQLITE_FORWARD = [
    _sqlite_trigger("surveys_answer", "INSERT"),
    _sqlite_trigger("surveys_answer", "UPDATE OF question_id, n_categories"),
    _sqlite_trigger("surveys_calibrationpair", "INSERT"),
    _sqlite_trigger("surveys_calibrationpair", "UPDATE OF question_id, n_categories"),
    "CREATE TRIGGER surveys_question_n_categories_frozen "
    "BEFORE UPDATE OF n_categories ON surveys_question "
    "WHEN NEW.n_categories IS NOT OLD.n_categories AND ("
    "EXISTS (SELECT 1 FROM surveys_answer a WHERE a.question_id = OLD.id) OR "
    "EXISTS (SELECT 1 FROM surveys_calibrationpair c WHERE c.question_id = OLD.id)) "
    "BEGIN SELECT RAISE(ABORT, "
    "'FOREIGN KEY constraint failed: answers refer to this question''s n_categories'); END",
]
_SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS surveys_answer_n_categories_insert",
    "DROP TRIGGER IF EXISTS surveys_answer_n_categories_update",
    "DROP TRIGGER IF EXISTS surveys_calibrationpair_n_categories_insert",
    "DROP TRIGGER IF EXISTS surveys_calibrationpair_n_categories_update",
    "DROP TRIGGER IF EXISTS surveys_question_n_categories_frozen",
]


def _run(statements_by_vendor: dict[str, list[str]]):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("surveys", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": _POSTGRES_FORWARD, "sqlite": _SQLITE_FORWARD}),
            _run({"postgresql": _POSTGRES_BACKWARD, "sqlite": _SQLITE_BACKWARD}),
        )
    ]
