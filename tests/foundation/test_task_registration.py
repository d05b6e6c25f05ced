"""A web process (no worker, no autodiscovery run) still knows the tasks the services enqueue by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import django
django.setup()
from celery import current_app
from advisor.calibrations import FIT_TASK
print(FIT_TASK in current_app.tasks)
"""


def test_the_calibration_fit_task_is_registered_in_a_fresh_web_process() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "True"
