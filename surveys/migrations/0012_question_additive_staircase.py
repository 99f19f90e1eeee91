"""Allow ``additive_staircase`` on continuous questions (the staircase mechanism of Geng
and Viswanath 2016, ``privacy.mechanisms.noise.AdditiveStaircase``).

The check constraint ``question_type_shape_and_mechanism`` lists the continuous
mechanisms, so it is replaced. On SQLite that rebuilds ``surveys_question``, which
migration 0002's triggers read (and one is on it): they are dropped before the rebuild
and created again after it, as 0010 does for the answers table.
"""

import importlib

from django.db import migrations, models

_BINDING = importlib.import_module("surveys.migrations.0002_answer_code_range_binding")


def _sqlite(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


_DROP = _sqlite(_BINDING._SQLITE_BACKWARD)
_CREATE = _sqlite(_BINDING._SQLITE_FORWARD)


def _shape(continuous_mechanisms):
    return models.CheckConstraint(
        condition=models.Q(
            models.Q(
                (
                    "mechanism__in",
                    (
                        "none",
                        "randomised_response",
                        "negative_uniform",
                        "negative_gaussian",
                        "negative_manual",
                    ),
                ),
                ("n_categories__gte", 2),
                ("n_categories__lte", 100),
                ("range_high__isnull", True),
                ("range_low__isnull", True),
                ("type__in", ("binary", "nominal", "ordinal")),
            ),
            models.Q(
                ("mechanism__in", continuous_mechanisms),
                ("n_categories", 0),
                ("range_high__isnull", False),
                ("range_low__isnull", False),
                ("range_low__lt", models.F("range_high")),
                ("type", "continuous"),
            ),
            _connector="OR",
        ),
        name="question_type_shape_and_mechanism",
        violation_error_message=(
            "A discrete question needs 2 or more categories and a discrete mechanism; "
            "a continuous one a range low < high and a continuous mechanism."
        ),
    )


class Migration(migrations.Migration):
    dependencies = [("surveys", "0011_verbose_names")]

    operations = [
        migrations.RunPython(_DROP, _CREATE),
        migrations.RemoveConstraint(
            model_name="question", name="question_type_shape_and_mechanism"
        ),
        migrations.AddConstraint(
            model_name="question",
            constraint=_shape(
                (
                    "none",
                    "additive_uniform",
                    "additive_gaussian",
                    "additive_laplace",
                    "additive_staircase",
                    "retention_replacement",
                )
            ),
        ),
        migrations.RunPython(_CREATE, _DROP),
    ]
