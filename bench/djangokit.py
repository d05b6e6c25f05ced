"""What the in-process benches share: Django set up on a throwaway SQLite database (migrated, the
bundled prices and quotes loaded when asked) and the median time of a warmed-up call."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def setup_django(
    *, prefix: str, database_url: str | None = None, load_data: bool = True, env: dict[str, str] | None = None
) -> str:
    """Configure and set up Django for a bench; returns the database URL used.

    Without `database_url` a fresh SQLite file under a new temporary folder named after `prefix`.
    `env` holds further settings (set only where the environment does not already have them)."""
    if database_url is None:
        database_url = f"sqlite:///{Path(tempfile.mkdtemp(prefix=prefix)) / 'bench.sqlite3'}"
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production-0123456789")
    for name, value in (env or {}).items():
        os.environ.setdefault(name, value)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)
    if load_data:
        from pricing.services import load_bundled_data

        print(load_bundled_data())
    return database_url


def median_seconds(fn: Callable[[], object], repeats: int, *, clock: Callable[[], float] = time.perf_counter) -> float:
    """Median of `repeats` timed calls after one untimed call that warms caches (imports, tables, query plans).

    `clock=time.process_time` counts this process's CPU only, for a machine other work shares."""
    fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)
