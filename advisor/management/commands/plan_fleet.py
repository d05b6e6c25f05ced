"""``python manage.py plan_fleet FLEET.json [--usage usage.csv]``: print the Fleet Plan JSON.

The same document as ``POST /api/v1/fleet-plans``. Exit status 2 with a message naming the bad field
(its JSON pointer) when a file cannot be read, is not JSON, or is not a valid Fleet Plan input.
``-`` reads the fleet from standard input."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from advisor.advice.fleet.service import fleet_plan
from advisor.management.jsonfile import parse_json_argument
from advisor.scenario import ScenarioError
from core.inputfile import read_input_text

INVALID_INPUT = 2


def _read(path: str, what: str) -> str:
    try:
        # utf-8-sig: Windows editors save UTF-8 with a byte order mark, which json.loads refuses.
        text = read_input_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{path}: cannot read the {what} ({exc})", returncode=INVALID_INPUT) from exc
    return text.removeprefix("\ufeff")


class Command(BaseCommand):
    help = "Print the Fleet Plan JSON for a fleet file (the same document as POST /api/v1/fleet-plans)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fleet", help="path of a Fleet Plan JSON file, or - for standard input")
        parser.add_argument("--usage", help="a usage CSV (timestamp,gpus_busy[,gpus_pending]) for /usage/csv")
        parser.add_argument("--compact", action="store_true", help="one line instead of indented JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["fleet"]
        text = _read(path, "fleet file")
        usage = _read(options["usage"], "usage CSV") if options.get("usage") else None
        document = parse_json_argument(text, path=path)
        try:
            plan = fleet_plan(document=document, usage_csv=usage)
        except ScenarioError as exc:
            lines = "\n".join(f"  {e['pointer'] or '/'}: {e['message']}" for e in exc.errors)
            raise CommandError(f"{path}: invalid fleet plan\n{lines}", returncode=INVALID_INPUT) from exc
        indent = None if options["compact"] else 2
        self.stdout.write(json.dumps(plan, indent=indent, allow_nan=False))
