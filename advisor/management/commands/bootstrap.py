"""Migrate and load the bundled data (price snapshot, hardware quotes, default calibration). Idempotent."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.utils.module_loading import import_string

from core.commands import DatabaseCommand

# Each loader is idempotent, takes no arguments and returns one line saying what it did.
BUNDLED_DATA_LOADERS: list[str] = [
    "pricing.services.load_bundled_data",
    "advisor.calibrations.ensure_default_calibration",
]


class Command(DatabaseCommand):
    help = "Apply migrations and load the bundled data so the app works offline. Safe to run again."

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=max(0, options["verbosity"] - 1))
        for dotted_path in BUNDLED_DATA_LOADERS:
            loader = import_string(dotted_path)
            self.stdout.write(f"{dotted_path}: {loader()}")
        self.stdout.write(self.style.SUCCESS("bootstrap complete"))
