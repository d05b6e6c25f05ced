"""Every scenario in examples/ advises through the real command line: `manage.py advise examples/X.json`.

Each runs in a fresh process against a fresh SQLite database that `manage.py bootstrap` filled, as on a
first run. The environment is bare, as on a fresh clone: no SECRET_KEY, DEBUG or REDIS_URL, only the
database pointed at a temporary file (with DJANGO_ENV=development, since a DATABASE_URL alone would mark a
server), so the embedded default (a local development key, tasks in-process) is what runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# fleet-*.json are Fleet Plan inputs, not Scenarios: they plan through `manage.py plan_fleet` (below).
FLEETS = sorted((ROOT / "examples").glob("fleet-*.json"))
EXAMPLES = [p for p in sorted((ROOT / "examples").glob("*.json")) if p not in FLEETS]


def _env(database: Path) -> dict[str, str]:
    kept = {k: os.environ[k] for k in ("PATH", "HOME", "PYTHONPATH", "LANG") if k in os.environ}
    return {**kept, "DJANGO_ENV": "development", "DATABASE_URL": f"sqlite:///{database}"}


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def first_run_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = _env(tmp_path_factory.mktemp("examples") / "db.sqlite3")
    done = _manage(env, "bootstrap")
    assert done.returncode == 0, done.stderr
    assert "development mode" in done.stderr
    return env


def test_the_examples_cover_training_the_small_team_node_and_inference() -> None:
    names = {path.stem for path in EXAMPLES}
    assert {"7b-training", "70b-training", "small-team-node", "inference-service"} <= names
    kinds = {json.loads(path.read_text())["workload"]["kind"] for path in EXAMPLES}
    assert kinds == {"training", "inference"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_advises(path: Path, first_run_env: dict[str, str]) -> None:
    document: dict[str, Any] = json.loads(path.read_text())
    done = _manage(first_run_env, "advise", str(path.relative_to(ROOT)))
    assert done.returncode == 0, done.stderr
    advice = json.loads(done.stdout)
    assert advice["scenario"]["name"] == document["name"]
    assert advice["kind"] == document["workload"]["kind"]
    assert advice["recommendation"]["action"] in ("rent", "buy")
    assert advice["sizes"] and advice["prices_as_of"]
    chosen = next(s for s in advice["sizes"] if s["gpus"] == advice["recommendation"]["gpus"])
    assert chosen["rent"]["offer"]["source"]
    if document["workload"]["kind"] == "training":
        assert [s["gpus"] for s in advice["sizes"]] == document["cluster_sizes"]
        assert all(s["run_hours"] > 0 for s in advice["sizes"] if s["fits_memory"])


@pytest.mark.parametrize("path", FLEETS, ids=[p.stem for p in FLEETS])
def test_fleet_example_plans(path: Path, first_run_env: dict[str, str]) -> None:
    document: dict[str, Any] = json.loads(path.read_text())
    done = _manage(first_run_env, "plan_fleet", str(path.relative_to(ROOT)))
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["fleet"]["name"] == document["name"]
    # Every job is in the plan by its name; a service's peak hours are lines of its own ("name (peak hours)").
    names = [j["name"] for j in document["jobs"]]
    assert [j["name"] for j in plan["jobs"] if j["name"] in names] == names and plan["prices_as_of"]
    assert all(j["name"] in names or j["name"].removesuffix(" (peak hours)") in names for j in plan["jobs"])
    rec = plan["recommendation"]
    assert sum(t["usd_per_year"] for t in rec["tiers"]) == pytest.approx(rec["usd_per_year"])
