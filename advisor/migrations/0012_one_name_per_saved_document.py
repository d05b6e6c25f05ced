"""Saved scenarios and fleets (and their versions) carry their row's name as the document's own ``name``.

Since the one-name rule (advisor.versioned.named_document) the API refuses a body whose envelope name and
document name differ, and writes the envelope's into the document. Items saved before it (older API clients, the
web rename before the scenario pages followed the rule, the fleet page until it did) may hold another name in the
document, or none: the list and a proposal's title showed the row's name, the advice, PDF and plan JSON the
document's ("Untitled ..." where absent), and a client's straight GET -> PUT of such an item was a 400. This writes
each row's name into its document where the document has none or a different one; the row's name is the one the
user saw and chose in the list. Proposals keep their document as issued (a frozen record). Reversing is a no-op:
the names written are the rows' own, and the old differing names are not needed to read anything."""

from __future__ import annotations

from typing import Any

from django.db import migrations

SAVED_DOCUMENTS = ("Scenario", "ScenarioVersion", "Fleet", "FleetVersion")


def forwards(apps: Any, schema_editor: Any) -> None:
    for label in SAVED_DOCUMENTS:
        model = apps.get_model("advisor", label)
        for row in model.objects.only("pk", "name", "document").iterator(chunk_size=500):
            document = row.document
            if isinstance(document, dict) and document.get("name") != row.name:
                model.objects.filter(pk=row.pk).update(document={**document, "name": row.name})


class Migration(migrations.Migration):
    dependencies = [("advisor", "0011_calibration_loo_mape_null_until_fitted")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
