"""Saved scenarios and fleets (and their versions) spelled as the Scenario's choices are listed.

Until the Scenario became one typed model, the parser trimmed and lower-cased choices (`" H100-SXM"` was
`h100-sxm`, an empty `stack` was unknown) and stored the document as given; now choices must match exactly,
as the schema's enums say, so such a document would answer 409 on its advice and break a generated client on
GET. This rewrites those values to what the old parser read them as. Every choice value is lower case, so
`strip().lower()` is exactly the old reading. Proposals keep the document as issued (a frozen record)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

WORKLOAD_CHOICES = ("kind", "precision", "stack")


def _canonical(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _canonical_list(values: Any) -> Any:
    return [_canonical(v) for v in values] if isinstance(values, list) else values


def _workload(workload: Any) -> None:
    if not isinstance(workload, dict):
        return
    for key in WORKLOAD_CHOICES:
        if key in workload:
            workload[key] = _canonical(workload[key])
    if workload.get("stack") == "":
        workload["stack"] = None
    model = workload.get("model")
    if isinstance(model, dict) and "name" in model:
        model["name"] = _canonical(model["name"])
    parallelism = workload.get("parallelism")
    if isinstance(parallelism, dict) and "strategy" in parallelism:
        parallelism["strategy"] = _canonical(parallelism["strategy"])


def canonical_document(document: Any) -> Any:
    """The document with its choice values as the old parser read them (a Scenario or a Fleet Plan input)."""
    if not isinstance(document, dict):
        return document
    if "gpu" in document:
        document["gpu"] = _canonical(document["gpu"])
    if "compare_gpus" in document:
        document["compare_gpus"] = _canonical_list(document["compare_gpus"])
    _workload(document.get("workload"))
    rent = document.get("rent")
    if isinstance(rent, dict):
        for key in ("markets", "providers"):
            if key in rent:
                rent[key] = _canonical_list(rent[key])
    for job in document.get("jobs") or []:
        if isinstance(job, dict):
            _workload(job.get("workload"))
    return document


def forwards(apps: Any, schema_editor: Any) -> None:
    for label in ("Scenario", "ScenarioVersion", "Fleet", "FleetVersion"):
        model = apps.get_model("advisor", label)
        for row in model.objects.only("pk", "document").iterator(chunk_size=500):
            before = repr(row.document)
            canonical = canonical_document(row.document)
            if repr(canonical) != before:
                model.objects.filter(pk=row.pk).update(document=canonical)


class Migration(migrations.Migration):
    dependencies = [("advisor", "0008_proposal_of_a_saved_fleet")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
