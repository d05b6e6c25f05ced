"""The dependency audit's verdicts (.ci/audit.py): an unreachable vulnerability service is NOT AUDITED,
never a pass; a known vulnerability fails unless justified; the locks are audited by public version."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ci_audit", ROOT / ".ci" / "audit.py")
assert _spec and _spec.loader
audit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(audit)


def _dep(name: str, *, vulns: list[dict[str, object]] | None = None, skip: str | None = None) -> dict[str, object]:
    entry: dict[str, object] = {"name": name, "version": "1.0"}
    if skip:
        entry["skip_reason"] = skip
    else:
        entry["vulns"] = vulns or []
    return entry


def test_an_unreachable_service_is_not_audited_not_a_pass() -> None:
    report = {"dependencies": [_dep("django"), _dep("numpy", skip="Dependency not found on PyPI")]}
    outcome, lines = audit.judge(report, {})
    assert outcome == audit.NOT_AUDITED != audit.AUDITED
    assert "NOT AUDITED: 1 of 2" in lines[-1]


def test_a_known_vulnerability_fails_unless_justified() -> None:
    vuln = {"id": "PYSEC-2099-1", "aliases": ["CVE-2099-1"], "fix_versions": ["1.1"]}
    report = {"dependencies": [_dep("django", vulns=[vuln])]}
    assert audit.judge(report, {})[0] == audit.VULNERABLE
    outcome, lines = audit.judge(report, {"CVE-2099-1": "not reachable here"})
    assert outcome == audit.AUDITED
    assert "accepted django 1.0: PYSEC-2099-1" in lines[0]


def test_a_clean_report_is_audited() -> None:
    outcome, lines = audit.judge({"dependencies": [_dep("django"), _dep("numpy")]}, {})
    assert outcome == audit.AUDITED
    assert "2 locked packages, no known vulnerabilities" in lines[-1]


def test_the_locks_are_read_by_public_version(tmp_path: Path) -> None:
    lock = tmp_path / "lock.txt"
    lock.write_text(
        "torch==2.13.0+cpu \\\n    --hash=sha256:ab\n    # via x\nDjango==5.2.19 \\\n    --hash=sha256:cd\n"
        "fonttools[woff]==4.68.0 \\\n    --hash=sha256:ef\n"
    )
    # A pin with the extras a dependency asks for (the locks keep them: Makefile LOCK) is read by its name.
    assert audit.locked_pins((lock,)) == {"torch": "2.13.0", "django": "5.2.19", "fonttools": "4.68.0"}


def test_both_real_locks_pin_every_package_with_a_hash() -> None:
    for lock in audit.LOCKS:
        text = lock.read_text()
        pins = [line for line in text.splitlines() if audit.PIN.match(line)]
        assert pins, lock
        assert len(pins) == text.count("==") and all(line.rstrip().endswith("\\") for line in pins), lock
    runtime = audit.locked_pins((audit.LOCKS[0],))
    assert not {"torch", "playwright", "pytest", "schemathesis", "pypdf"} & runtime.keys()
    assert audit.locked_pins((audit.LOCKS[1],))["torch"] == "2.13.0"


def test_the_test_lock_runs_the_runtime_locks_versions() -> None:
    runtime, test = (audit.locked_pins((lock,)) for lock in audit.LOCKS)
    assert {name: test.get(name) for name in runtime} == runtime


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+", 1)[0]))


def test_pyproject_floors_are_the_tested_release_series_and_torch_is_not_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    locked = {name.replace("_", "-"): version for name, version in audit.locked_pins((audit.LOCKS[1],)).items()}
    for requirement in declared:
        match = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?(.*)$", requirement)
        assert match, requirement
        name, specifiers = match.group(1).lower(), match.group(2)
        assert "==" not in specifiers, f"{requirement}: ranges in pyproject, exact versions in the locks"
        floor = re.search(r">=\s*([\d.]+)", specifiers)
        assert floor, f"{requirement}: no floor"
        tested = _release(locked[name])
        # The floor names the release series the lock pins: no older, untested series is claimed.
        assert tested[: len(_release(floor.group(1)))] == _release(floor.group(1)), (requirement, locked[name])
