"""Answers' references checked once per statement instead of once per row (PostgreSQL).

A bulk batch of 10,000 responses writes 70,000 answers. Their two foreign keys (to the
response, and the composite ``(question_id, n_categories)`` of migration 0002) ran one
referential-integrity query per row at commit: 140,000 queries, measured at about 19 us
each, the largest part of a batch's time in the database (issue 9, ingest).

The guarantee stays in the database, checked per statement with the statement's
transition tables (one set-based query per table, however many rows):

* ``surveys_answer`` INSERT / UPDATE: every distinct ``response_id`` names a response
  and every distinct ``(question_id, n_categories)`` a question with that many
  categories (so ``0 <= code < n_categories`` still means one of its categories). The
  referenced rows are locked ``FOR KEY SHARE`` as a foreign key's check locks them, so a
  concurrent delete either waits for this transaction or has already removed the row
  (then the check fails).
* ``surveys_response`` DELETE / UPDATE and ``surveys_question`` DELETE / UPDATE: no
  answer may be left referring to a row (or an ``(id, n_categories)``) that is gone. A
  delete racing an insert waits for the inserter's ``FOR KEY SHARE`` lock, then sees the
  committed answers (READ COMMITTED, the project's isolation level) and fails.

A violation raises SQLSTATE 23503 (foreign_key_violation), an ``IntegrityError`` as
before. Unlike the deferred keys, the checks run at the end of each statement, so
answers must be inserted after their response (as every writer does) and deleted
before it (as Django's cascades do). ``TRUNCATE`` is not checked.

SQLite (the embedded default) keeps its foreign key and the triggers of 0002 unchanged;
the model says ``db_constraint=False`` for the response because on PostgreSQL the
integrity is these triggers' job.
"""

import django.db.models.deletion
from django.db import migrations, models

_CHECK_ANSWERS = """
CREATE FUNCTION surveys_answer_references_exist() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    wanted bigint;
    found bigint;
BEGIN
    SELECT count(*), count(locked.id) INTO wanted, found
    FROM (SELECT DISTINCT response_id FROM new_answers) AS ref
    LEFT JOIN LATERAL (
        SELECT r.id FROM surveys_response r WHERE r.id = ref.response_id FOR KEY SHARE OF r
    ) AS locked ON true;
    IF found < wanted THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = format('%s answer row(s) refer to a response that does not exist',
                             wanted - found),
            TABLE = 'surveys_answer', CONSTRAINT = 'answer_response_exists';
    END IF;
    SELECT count(*), count(locked.id) INTO wanted, found
    FROM (SELECT DISTINCT question_id, n_categories FROM new_answers) AS ref
    LEFT JOIN LATERAL (
        SELECT q.id FROM surveys_question q
        WHERE q.id = ref.question_id AND q.n_categories = ref.n_categories
        FOR KEY SHARE OF q
    ) AS locked ON true;
    IF found < wanted THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = 'an answer refers to a question that does not exist '
                      'or has another number of categories',
            TABLE = 'surveys_answer', CONSTRAINT = 'answer_question_n_categories_exist';
    END IF;
    RETURN NULL;
END
$$
"""

_CHECK_RESPONSES_GONE = """
CREATE FUNCTION surveys_response_not_referenced() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM old_responses o
        WHERE NOT EXISTS (SELECT 1 FROM surveys_response r WHERE r.id = o.id)
          AND EXISTS (SELECT 1 FROM surveys_answer a WHERE a.response_id = o.id)
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = 'a response still has answers; delete them first',
            TABLE = 'surveys_response', CONSTRAINT = 'answer_response_exists';
    END IF;
    RETURN NULL;
END
$$
"""

_CHECK_QUESTIONS_GONE = """
CREATE FUNCTION surveys_question_not_referenced() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM old_questions o
        WHERE NOT EXISTS (
            SELECT 1 FROM surveys_question q WHERE q.id = o.id AND q.n_categories = o.n_categories
        )
          AND EXISTS (
            SELECT 1 FROM surveys_answer a
            WHERE a.question_id = o.id AND a.n_categories = o.n_categories
        )
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = 'answers refer to this question and its number of categories',
            TABLE = 'surveys_question', CONSTRAINT = 'answer_question_n_categories_exist';
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


_POSTGRES_FORWARD = [
    # The per-row keys: the composite one of 0002 and Django's key to the response.
    "ALTER TABLE surveys_answer DROP CONSTRAINT answer_question_n_categories_fk",
    """
    DO $$
    DECLARE name text;
    BEGIN
        FOR name IN
            SELECT conname FROM pg_constraint
            WHERE conrelid = 'surveys_answer'::regclass AND contype = 'f'
        LOOP
            EXECUTE format('ALTER TABLE surveys_answer DROP CONSTRAINT %I', name);
        END LOOP;
    END
    $$
    """,
    _CHECK_ANSWERS,
    _CHECK_RESPONSES_GONE,
    _CHECK_QUESTIONS_GONE,
    _trigger(
        "surveys_answer_references_on_insert",
        "INSERT",
        "surveys_answer",
        "NEW TABLE AS new_answers",
        "surveys_answer_references_exist",
    ),
    _trigger(
        "surveys_answer_references_on_update",
        "UPDATE",
        "surveys_answer",
        "NEW TABLE AS new_answers",
        "surveys_answer_references_exist",
    ),
    _trigger(
        "surveys_response_answers_on_delete",
        "DELETE",
        "surveys_response",
        "OLD TABLE AS old_responses",
        "surveys_response_not_referenced",
    ),
    _trigger(
        "surveys_response_answers_on_update",
        "UPDATE",
        "surveys_response",
        "OLD TABLE AS old_responses",
        "surveys_response_not_referenced",
    ),
    _trigger(
        "surveys_question_answers_on_delete",
        "DELETE",
        "surveys_question",
        "OLD TABLE AS old_questions",
        "surveys_question_not_referenced",
    ),
    _trigger(
        "surveys_question_answers_on_update",
        "UPDATE",
        "surveys_question",
        "OLD TABLE AS old_questions",
        "surveys_question_not_referenced",
    ),
]

_POSTGRES_BACKWARD = [
    "DROP TRIGGER IF EXISTS surveys_answer_references_on_insert ON surveys_answer",
    "DROP TRIGGER IF EXISTS surveys_answer_references_on_update ON surveys_answer",
    "DROP TRIGGER IF EXISTS surveys_response_answers_on_delete ON surveys_response",
    "DROP TRIGGER IF EXISTS surveys_response_answers_on_update ON surveys_response",
    "DROP TRIGGER IF EXISTS surveys_question_answers_on_delete ON surveys_question",
    "DROP TRIGGER IF EXISTS surveys_question_answers_on_update ON surveys_question",
    "DROP FUNCTION IF EXISTS surveys_answer_references_exist()",
    "DROP FUNCTION IF EXISTS surveys_response_not_referenced()",
    "DROP FUNCTION IF EXISTS surveys_question_not_referenced()",
    "ALTER TABLE surveys_answer ADD CONSTRAINT surveys_answer_response_id_fk "
    "FOREIGN KEY (response_id) REFERENCES surveys_response (id) "
    "DEFERRABLE INITIALLY DEFERRED",
    "ALTER TABLE surveys_answer ADD CONSTRAINT answer_question_n_categories_fk "
    "FOREIGN KEY (question_id, n_categories) REFERENCES surveys_question (id, n_categories) "
    "DEFERRABLE INITIALLY DEFERRED",
]


def _run(statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("surveys", "0006_response_tally")]

    operations = [
        migrations.SeparateDatabaseAndState(
            # SQLite keeps the key of 0001 (a table rebuild would drop 0002's triggers).
            state_operations=[
                migrations.AlterField(
                    model_name="answer",
                    name="response",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="answers",
                        to="surveys.response",
                    ),
                )
            ],
            database_operations=[
                migrations.RunPython(_run(_POSTGRES_FORWARD), _run(_POSTGRES_BACKWARD))
            ],
        )
    ]
