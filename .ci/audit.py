"""Audit the locked dependencies (requirements/runtime.txt and test.txt) with pip-audit.

Outcomes, each with its own exit status so that a caller cannot mistake one for another:
  0  AUDITED: every locked package was looked up, no known vulnerability (or only justified ones);
  1  VULNERABLE: a known vulnerability not justified in requirements/audit-exceptions.txt;
  2  pip-audit itself failed (bad lock, crash);
  3  NOT AUDITED: the vulnerability service could not be reached (offline machine, a proxy that
     does not serve PyPI's JSON API), or some package could not be looked up. That is not a pass.

`make test` runs it as a report (3 is printed, not counted as a passing check); `make audit` runs
it with --strict (pip-audit --strict: any package it cannot audit fails) for machines that can reach
the service.

A local version label is audited as its public release: torch 2.13.0+cpu is the CPU build of
torch 2.13.0, carries the same code and advisories, and PyPI's JSON API only knows the public name.

    .venv/bin/python .ci/audit.py [--strict]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCKS = (ROOT / "requirements" / "runtime.txt", ROOT / "requirements" / "test.txt")
EXCEPTIONS = ROOT / "requirements" / "audit-exceptions.txt"
PIP_AUDIT = Path(sys.executable).with_name("pip-audit")
# name[extras]==version: the locks keep the extras dependencies ask for (Makefile LOCK); the name is group 1.
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[A-Za-z0-9._,\s-]*\])?==([^\s;\\]+)")
AUDITED, VULNERABLE, FAILED, NOT_AUDITED = 0, 1, 2, 3


def exceptions() -> dict[str, str]:
    """Vulnerability id -> justification, from `ID  reason` lines (# comments allowed)."""
    if not EXCEPTIONS.exists():
        return {}
    found = {}
    for line in EXCEPTIONS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            vuln_id, _, reason = line.partition(" ")
            found[vuln_id] = reason.strip()
    return found


def locked_pins(locks: tuple[Path, ...] = LOCKS) -> dict[str, str]:
    """name -> public version over all locks (a local label such as +cpu dropped)."""
    pins: dict[str, str] = {}
    for lock in locks:
        for line in lock.read_text().splitlines():
            match = PIN.match(line.strip())
            if match:
                pins[match.group(1).lower()] = match.group(2).split("+", 1)[0]
    return pins


def run_pip_audit(pins: dict[str, str], *, strict: bool) -> subprocess.CompletedProcess[str]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))
    command = [str(PIP_AUDIT), "--format", "json", "--progress-spinner", "off", "--disable-pip", "--no-deps"]
    command += ["--strict"] if strict else []
    command += ["-r", handle.name]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)  # noqa: S603
    finally:
        Path(handle.name).unlink()


def judge(report: dict[str, object], allowed: dict[str, str]) -> tuple[int, list[str]]:
    """The outcome and the lines that say it, from pip-audit's JSON report."""
    dependencies = report.get("dependencies", [])
    assert isinstance(dependencies, list)
    skipped = [d for d in dependencies if d.get("skip_reason")]
    lines, vulnerable = [], []
    for dependency in dependencies:
        for vuln in dependency.get("vulns", []):
            ids = {vuln["id"], *vuln.get("aliases", [])}
            justified = ids & allowed.keys()
            label = f"{dependency['name']} {dependency['version']}: {vuln['id']} (fixed in {vuln.get('fix_versions')})"
            if justified:
                lines.append(f"pip-audit: accepted {label}: {allowed[next(iter(justified))]}")
            else:
                vulnerable.append(label)
    if vulnerable:
        return VULNERABLE, [*lines, "pip-audit: VULNERABLE:\n  " + "\n  ".join(vulnerable)]
    if skipped:
        names = ", ".join(d["name"] for d in skipped[:8]) + (" ..." if len(skipped) > 8 else "")
        return NOT_AUDITED, [
            *lines,
            f"pip-audit: NOT AUDITED: {len(skipped)} of {len(dependencies)} locked packages could not be looked up "
            f"({names}; first reason: {skipped[0]['skip_reason']}). This is not a pass: run `make audit` on a "
            "machine that reaches PyPI's JSON API.",
        ]
    return AUDITED, [*lines, f"pip-audit: AUDITED: {len(dependencies)} locked packages, no known vulnerabilities"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="pip-audit --strict: a package it cannot audit fails")
    args = parser.parse_args(argv)
    result = run_pip_audit(locked_pins(), strict=args.strict)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        tail = result.stderr.strip()[-2000:]
        if args.strict and result.returncode != 0:
            # --strict stops at the first package it cannot look up: unreachable is a failure here.
            print(f"pip-audit --strict: NOT AUDITED (exit {result.returncode}): {tail}")
            return NOT_AUDITED
        print(f"pip-audit failed (exit {result.returncode}):\n{tail}")
        return FAILED
    outcome, lines = judge(report, exceptions())
    print("\n".join(lines))
    return outcome


if __name__ == "__main__":
    sys.exit(main())
