from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("chat", "0005_run_confidence_trace_verification"),
    ]

    operations = [
        migrations.AddField(
            model_name="researchrun",
            name="charts",
            field=models.JSONField(blank=True, default=list, help_text="The run's chart events, as sent."),
        ),
    ]
