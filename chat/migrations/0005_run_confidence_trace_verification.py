from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("chat", "0004_run_facts"),
    ]

    operations = [
        migrations.AddField(
            model_name="researchrun",
            name="confidence",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Evidence confidence after the last round: score, components, shallow.",
            ),
        ),
        migrations.AddField(
            model_name="researchrun",
            name="trace",
            field=models.JSONField(blank=True, default=list, help_text="One entry per research round."),
        ),
        migrations.AddField(
            model_name="researchrun",
            name="verification",
            field=models.JSONField(
                blank=True, default=list, help_text="Per cited marker: supported, unsupported or unreachable."
            ),
        ),
    ]
