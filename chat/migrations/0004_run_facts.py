from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("chat", "0003_run_attempts_and_events"),
    ]

    operations = [
        migrations.AddField(
            model_name="researchrun",
            name="facts",
            field=models.JSONField(
                blank=True, default=list, help_text="Figures computed from the market data, each with its inputs."
            ),
        ),
    ]
