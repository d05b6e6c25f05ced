"""``python manage.py advise SCENARIO.json``: print the Advice JSON of a Scenario file.

Exit status 2 with a message naming the bad field (its JSON pointer) when the file cannot be read,
is not JSON, or is not a valid Scenario. ``-`` reads the scenario from standard input."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from advisor.advice import advise
from advisor.management.commands.estimate import add_calibration_arguments, calibration_option
from advisor.management.jsonfile import invalid_document, read_json_file_argument
from advisor.scenario import ScenarioError
from core.commands import DatabaseCommand


class Command(DatabaseCommand):
    help = "Print the Advice JSON for a Scenario JSON file (the same document as POST /api/v1/advice)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("scenario", help="path of a Scenario JSON file, or - for standard input")
        parser.add_argument("--compact", action="store_true", help="one line instead of indented JSON")
        add_calibration_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["scenario"]
        document = read_json_file_argument(path, what="scenario file")
        try:
            advice = advise(document, calibration=calibration_option(options))
        except ScenarioError as exc:
            raise invalid_document(exc, path=path, what="scenario") from exc
        indent = None if options["compact"] else 2
        self.stdout.write(json.dumps(advice.to_dict(), indent=indent, allow_nan=False))
