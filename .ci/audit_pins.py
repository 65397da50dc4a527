"""CI: the pinned packages against published advisories, where advisory data can be reached.

`python .ci/audit_pins.py constraints.txt` (the standard library only, any Python 3.11).

pip-audit asks PyPI's JSON API (`https://pypi.org/pypi/<name>/<version>/json`, its `vulnerabilities`) about
each pin. Where that API answers 404 (an index that serves packages but not that API, as on the machines
here) pip-audit skips every package as "not found", and where it answers without a `vulnerabilities` key it
takes the package as clean; either way it ends with "No known vulnerabilities found", a silent pass. So the
decision is made here, in the open:

1. Probe the advisory API for the first pin, with a short timeout. No answer, an HTTP error, or an answer
   without a `vulnerabilities` list: the audit is SKIPPED, said so with the reason, exit 0 (CI does not fail
   because the network is absent, and does not pretend it checked anything).
2. Otherwise install pip-audit (pinned in `.ci/requirements-audit.txt`, a throwaway virtualenv: it is no
   dependency of the app) and audit every pin of the file, reading its JSON report: a known vulnerability
   fails CI (exit 1) naming it; pins it could not audit are named; a report-less failure of pip-audit is
   said to have skipped the audit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ADVISORY_URL = "https://pypi.org/pypi/{name}/{version}/json"  # the one pip-audit's PyPI service reads
PROBE_TIMEOUT_S = 5.0
AUDIT_TIMEOUT_S = 15  # pip-audit's own, per request
AUDIT_TOOL = Path(__file__).resolve().parent / "requirements-audit.txt"


@dataclass(frozen=True)
class Probe:
    """Whether the advisory API answered with advisory data, and if not, why not."""

    reachable: bool
    reason: str


@dataclass(frozen=True)
class Verdict:
    """The step's outcome: `passed`, `failed` (a known vulnerability), `incomplete` (some pins not audited)
    or `skipped` (nothing audited), with the lines that say so."""

    status: str
    lines: list[str]

    @property
    def exit_code(self) -> int:
        return 1 if self.status == "failed" else 0


def first_pin(requirements: Path) -> tuple[str, str]:
    """The first `name==version` line of a requirements file (extras and comments left aside)."""
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = (part.strip() for part in line.split("==", 1))
            return name.split("[", 1)[0], version.split(";", 1)[0].strip()
    raise SystemExit(f"{requirements}: no pinned requirement (name==version) to audit")


def probe_advisories(name: str, version: str, *, url: str = ADVISORY_URL, timeout_s: float = PROBE_TIMEOUT_S) -> Probe:
    """Ask the advisory API about one pin, as pip-audit would, and say whether advisory data came back."""
    target = url.format(name=name, version=version)
    try:
        with urllib.request.urlopen(target, timeout=timeout_s) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        return Probe(False, f"{target} answered HTTP {exc.code}")
    except (urllib.error.URLError, OSError) as exc:  # refused, no route, no DNS, timed out
        reason = getattr(exc, "reason", exc)
        return Probe(False, f"{target} could not be reached ({reason})")
    try:
        advisories = json.loads(body).get("vulnerabilities")
    except (ValueError, AttributeError):
        return Probe(False, f"{target} answered something other than a JSON object")
    if not isinstance(advisories, list):
        return Probe(False, f"{target} answered with no `vulnerabilities` list")
    return Probe(True, f"{target} answered with advisory data")


def judge_audit(report: dict[str, Any] | None, returncode: int, stderr: str) -> Verdict:
    """What pip-audit's JSON report (None: it wrote none) says about the pins."""
    if report is None:
        last = stderr.strip().splitlines()[-1:] or ["(nothing on stderr)"]
        return Verdict("skipped", [f"pip-audit stopped with exit {returncode} and no report: {last[0]}"])
    dependencies = report.get("dependencies", [])
    vulnerable = [dep for dep in dependencies if dep.get("vulns")]
    skipped = [dep for dep in dependencies if "skip_reason" in dep]
    audited = len(dependencies) - len(skipped)
    if vulnerable:
        lines = [f"{len(vulnerable)} of {audited} audited pins have known vulnerabilities:"]
        for dep in vulnerable:
            for vuln in dep["vulns"]:
                fixed = ", ".join(vuln.get("fix_versions") or []) or "no fixed version"
                lines.append(f"  {dep['name']} {dep.get('version', '')}: {vuln['id']} (fixed in: {fixed})")
        return Verdict("failed", lines + _not_audited(skipped))
    if not audited:
        reason = skipped[0]["skip_reason"] if skipped else "the report lists no pins"
        return Verdict("skipped", [f"none of {len(dependencies)} pins could be audited: {reason}"])
    if skipped:
        return Verdict("incomplete", [f"{audited} pins audited, no known vulnerabilities;", *_not_audited(skipped)])
    return Verdict("passed", [f"{audited} pins audited: no known vulnerabilities"])


def _not_audited(skipped: list[dict[str, Any]]) -> list[str]:
    if not skipped:
        return []
    return [f"{len(skipped)} pins NOT audited:", *(f"  {dep['name']}: {dep['skip_reason']}" for dep in skipped)]


def run_pip_audit(requirements: Path) -> tuple[dict[str, Any] | None, int, str]:
    """pip-audit, from a throwaway virtualenv, over every pin of `requirements` (no resolution, no pip):
    its JSON report (None if it wrote none), exit status and stderr."""
    with tempfile.TemporaryDirectory(prefix="audit-pins-") as scratch:
        tool = Path(scratch) / "venv"
        venv.EnvBuilder(with_pip=True).create(tool)
        install = [str(tool / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", str(AUDIT_TOOL)]
        installed = subprocess.run(install, capture_output=True, text=True, check=False)
        if installed.returncode != 0:
            return None, installed.returncode, f"installing pip-audit failed: {installed.stderr}"
        output = Path(scratch) / "report.json"
        audit = [
            str(tool / "bin" / "pip-audit"),
            *("--requirement", str(requirements), "--no-deps", "--disable-pip"),
            *("--format", "json", "--output", str(output), "--progress-spinner", "off"),
            *("--timeout", str(AUDIT_TIMEOUT_S)),
        ]
        completed = subprocess.run(audit, capture_output=True, text=True, check=False)
        try:
            report = json.loads(output.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = None
        return report, completed.returncode, completed.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requirements", type=Path, help="a fully pinned requirements file (constraints.txt)")
    requirements = parser.parse_args(argv).requirements
    name, version = first_pin(requirements)
    probe = probe_advisories(name, version, url=ADVISORY_URL)
    if not probe.reachable:
        verdict = Verdict("skipped", [f"no advisory data: {probe.reason}", "the pins were NOT checked"])
    else:
        verdict = judge_audit(*run_pip_audit(requirements))
    print(f"pip-audit {verdict.status.upper()} ({requirements}):")
    for line in verdict.lines:
        print(f"  {line}")
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
