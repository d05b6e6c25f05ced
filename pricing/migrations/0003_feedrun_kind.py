# FeedRun.kind: a price-sheet import (import_prices) was recorded like a live refresh, and as the last successful
# run of its feed it became the size the next live refresh was checked against (PRICING_MIN_FRACTION_OF_LAST_RUN):
# after a one-row import a truncated catalog passed and withdrew the good offers. Runs already recorded are
# classified by what feed_import and snapshot_load wrote: the "imported from files: ..." warning, the snapshot feed.

from django.db import migrations, models

IMPORT_WARNING = "imported from files: "


def classify(apps, schema_editor):  # type: ignore[no-untyped-def]
    FeedRun = apps.get_model("pricing", "FeedRun")
    FeedRun.objects.filter(feed="snapshot").update(kind="snapshot")
    imports = [
        run.id
        for run in FeedRun.objects.exclude(feed="snapshot").only("id", "warnings").iterator()
        if run.warnings and isinstance(run.warnings[0], str) and run.warnings[0].startswith(IMPORT_WARNING)
    ]
    FeedRun.objects.filter(id__in=imports).update(kind="import")


class Migration(migrations.Migration):
    dependencies = [
        ("pricing", "0002_feed_names_40_chars_for_skypilot_clouds"),
    ]

    operations = [
        migrations.AddField(
            model_name="feedrun",
            name="kind",
            field=models.CharField(
                choices=[("refresh", "Live refresh"), ("import", "Import from files"), ("snapshot", "Bundled snapshot")],
                default="refresh",
                max_length=10,
            ),
        ),
        migrations.RunPython(classify, migrations.RunPython.noop),
    ]
