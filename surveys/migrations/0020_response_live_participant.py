"""The live responses of a survey in id order with their participant (issue 29).

A change joins the answers of two surveys on the participant: with this partial covering
index each survey's answers meet their participant in a merge of two index-only scans
(``surveys/pairs.py``). Withdrawn responses are left out, as every statistic leaves them.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("surveys", "0019_response_record_key_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="response",
            index=models.Index(
                condition=models.Q(("withdrawn_at__isnull", True)),
                fields=["survey", "id"],
                include=("participant",),
                name="response_live_participant",
            ),
        ),
    ]
