"""``python manage.py plan_fleet FLEET.json [--usage usage.csv]``: print the Fleet Plan JSON.

The same document as ``POST /api/v1/fleet-plans``. Exit status 2 with a message naming the bad field
(its JSON pointer) when a file cannot be read, is not JSON, or is not a valid Fleet Plan input.
``-`` reads the fleet from standard input."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from advisor.advice.fleet.service import fleet_plan
from advisor.management.jsonfile import invalid_document, read_file_argument, read_json_file_argument
from advisor.scenario import ScenarioError


class Command(BaseCommand):
    help = "Print the Fleet Plan JSON for a fleet file (the same document as POST /api/v1/fleet-plans)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="path of a Fleet Plan JSON file, or - for standard input")
        parser.add_argument("--usage", help="a usage CSV (timestamp,gpus_busy[,gpus_pending]) for /usage/csv")
        parser.add_argument("--compact", action="store_true", help="one line instead of indented JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["fleet"]
        document = read_json_file_argument(path, what="fleet file")
        usage = read_file_argument(options["usage"], what="usage CSV") if options.get("usage") else None
        try:
            plan = fleet_plan(document=document, usage_csv=usage)
        except ScenarioError as exc:
            raise invalid_document(exc, path=path, what="fleet plan") from exc
        indent = None if options["compact"] else 2
        self.stdout.write(json.dumps(plan, indent=indent, allow_nan=False))
