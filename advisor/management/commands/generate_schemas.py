"""Write the JSON Schemas in advisor/schemas/ that are generated from the typed models (`--check`: only
compare, exit 1 naming each file that differs; CI and a test run it so a hand edit or a model change without
regenerating cannot be committed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from advisor.advice.fleet.models import generated_schema_files as fleet_files
from advisor.advice.models import generated_schema_files as advice_files
from advisor.scenario_model import generated_schema_files as scenario_files

SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"


def generated_schema_files() -> dict[str, str]:
    """Every generated file in advisor/schemas/ -> its text: the Scenario, the Advice (training, inference), the
    Fleet Plan (input and plan)."""
    return {**scenario_files(), **advice_files(), **fleet_files()}


def stale_schema_files(directory: Path = SCHEMAS_DIR) -> list[str]:
    """Names of the generated files whose committed text differs from what the models generate."""
    stale = []
    for name, text in generated_schema_files().items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    return stale


class Command(BaseCommand):
    help = "Generate advisor/schemas/*.schema.json from the typed document models."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--check", action="store_true", help="Only report files that differ; exit 1 if any.")

    def handle(self, *args: Any, check: bool = False, **options: Any) -> None:
        if check:
            stale = stale_schema_files()
            if stale:
                raise CommandError(f"out of date (run manage.py generate_schemas): {', '.join(stale)}", returncode=1)
            self.stdout.write("schemas up to date")
            return
        for name, text in generated_schema_files().items():
            (SCHEMAS_DIR / name).write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote advisor/schemas/{name}")
