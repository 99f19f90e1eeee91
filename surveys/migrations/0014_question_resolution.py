"""The reporting grid of continuous questions with noise (issue 31).

``resolution`` is NULL for every question that exists already: those surveys keep the
old continuous noise law and their reports are accepted as before (the scheme says so).
A plain ``ALTER TABLE ... ADD COLUMN`` (nullable, no default): SQLite does not rebuild
the table, so migration 0002's triggers stay.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('surveys', '0013_statistics_tables_autovacuum'),
    ]

    operations = [
        migrations.AddField(
            model_name='question',
            name='resolution',
            field=models.FloatField(blank=True, null=True),
        ),
    ]
