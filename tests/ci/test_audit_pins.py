"""`.ci/audit_pins.py`, the CI step that checks the pins against advisories: it audits only where the
advisory API answers with advisory data, and otherwise says plainly that it skipped (exit 0); a known
vulnerability fails it, pins left unaudited are named. Offline: the advisory API is a local page server."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from pathlib import Path

import pytest

from tests.fakes.page_server import FakePageServer

ROOT = Path(__file__).resolve().parents[2]


def _load_script():
    spec = importlib.util.spec_from_file_location("audit_pins", ROOT / ".ci" / "audit_pins.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


audit_pins = _load_script()
ADVISORIES = "/pypi/django/5.2.19/json"
WAREHOUSE_REPLY = json.dumps({"info": {"name": "Django", "version": "5.2.19"}, "urls": [], "vulnerabilities": []})


def advisory_url(server: FakePageServer) -> str:
    return server.url("/pypi/{name}/{version}/json")


# --- is there advisory data? -----------------------------------------------------------------------------


def test_an_answer_with_a_vulnerabilities_list_is_advisory_data(page_server: FakePageServer) -> None:
    page_server.add(ADVISORIES, WAREHOUSE_REPLY, content_type="application/json")

    probe = audit_pins.probe_advisories("django", "5.2.19", url=advisory_url(page_server))

    assert probe.reachable, probe.reason
    assert page_server.hits[ADVISORIES] == 1


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        ("<html>Not Found</html>", 404, "answered HTTP 404"),  # an index that serves packages, not this API
        ("<html>Bad gateway</html>", 502, "answered HTTP 502"),
        ('{"info": {"name": "Django"}}', 200, "no `vulnerabilities` list"),  # pip-audit would call it clean
        ("<html>a captive portal</html>", 200, "other than a JSON object"),
    ],
)
def test_an_answer_without_advisory_data_is_no_advisory_data(
    page_server: FakePageServer, body: str, status: int, reason: str
) -> None:
    page_server.add(ADVISORIES, body, status=status)

    probe = audit_pins.probe_advisories("django", "5.2.19", url=advisory_url(page_server))

    assert not probe.reachable
    assert reason in probe.reason and "/pypi/django/5.2.19/json" in probe.reason


def test_no_network_is_no_advisory_data() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused

        probe = audit_pins.probe_advisories("django", "5.2.19", url=f"http://127.0.0.1:{port}/{{name}}/{{version}}")

    assert not probe.reachable and "could not be reached" in probe.reason


def test_a_service_that_does_not_answer_in_time_is_no_advisory_data(page_server: FakePageServer) -> None:
    page_server.add(ADVISORIES, WAREHOUSE_REPLY, content_type="application/json", delay_s=2)

    probe = audit_pins.probe_advisories("django", "5.2.19", url=advisory_url(page_server), timeout_s=0.2)

    assert not probe.reachable and "timed out" in probe.reason


# --- what the audit found -------------------------------------------------------------------------------


def dep(name: str, *vulns: str) -> dict:
    return {"name": name, "version": "1.0", "vulns": [{"id": v, "fix_versions": ["1.1"]} for v in vulns]}


def not_found(name: str) -> dict:
    return {"name": name, "skip_reason": f"Dependency not found on PyPI and could not be audited: {name} (1.0)"}


def test_a_known_vulnerability_fails_ci_and_is_named() -> None:
    verdict = audit_pins.judge_audit({"dependencies": [dep("django", "PYSEC-2026-1"), dep("httpx2")]}, 1, "")

    assert (verdict.status, verdict.exit_code) == ("failed", 1)
    assert any("django 1.0: PYSEC-2026-1 (fixed in: 1.1)" in line for line in verdict.lines)


def test_every_pin_audited_and_clean_passes() -> None:
    verdict = audit_pins.judge_audit({"dependencies": [dep("django"), dep("httpx2")]}, 0, "")

    assert (verdict.status, verdict.exit_code) == ("passed", 0)
    assert verdict.lines == ["2 pins audited: no known vulnerabilities"]


def test_pins_left_unaudited_are_named_not_passed_over() -> None:
    """pip-audit itself says "No known vulnerabilities found" here, and exits 0."""
    verdict = audit_pins.judge_audit({"dependencies": [dep("django"), not_found("private-pkg")]}, 0, "")

    assert (verdict.status, verdict.exit_code) == ("incomplete", 0)
    assert "1 pins NOT audited:" in verdict.lines and any("private-pkg" in line for line in verdict.lines)


def test_no_pin_audited_is_a_skip_not_a_pass() -> None:
    verdict = audit_pins.judge_audit({"dependencies": [not_found("django"), not_found("httpx2")]}, 0, "")

    assert (verdict.status, verdict.exit_code) == ("skipped", 0)
    assert "none of 2 pins could be audited" in verdict.lines[0]


def test_an_audit_that_wrote_no_report_skipped_and_says_why() -> None:
    verdict = audit_pins.judge_audit(None, 1, "ERROR:pip_audit._cli:Tip: your network may be blocking this service.\n")

    assert (verdict.status, verdict.exit_code) == ("skipped", 0)
    assert "exit 1" in verdict.lines[0] and "network may be blocking" in verdict.lines[0]


# --- the step, as CI runs it ----------------------------------------------------------------------------


def test_without_advisory_data_the_step_says_it_skipped_and_installs_nothing(
    page_server: FakePageServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(audit_pins, "ADVISORY_URL", advisory_url(page_server))  # it answers 404, as here
    monkeypatch.setattr(audit_pins, "run_pip_audit", lambda _: pytest.fail("pip-audit ran without advisory data"))

    status = audit_pins.main([str(ROOT / "constraints.txt")])

    printed = capsys.readouterr().out
    first = audit_pins.first_pin(ROOT / "constraints.txt")
    assert status == 0
    assert printed.startswith("pip-audit SKIPPED (")
    assert page_server.hits[f"/pypi/{first[0]}/{first[1]}/json"] == 1
    assert f"/pypi/{first[0]}/{first[1]}/json answered HTTP 404" in printed and "the pins were NOT checked" in printed


def test_with_advisory_data_the_step_audits_and_fails_on_a_known_vulnerability(
    page_server: FakePageServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name, version = audit_pins.first_pin(ROOT / "constraints.txt")
    page_server.add(f"/pypi/{name}/{version}/json", WAREHOUSE_REPLY, content_type="application/json")
    monkeypatch.setattr(audit_pins, "ADVISORY_URL", advisory_url(page_server))
    audited: list[Path] = []

    def pip_audit(requirements: Path) -> tuple[dict, int, str]:
        audited.append(requirements)
        return {"dependencies": [dep(name, "GHSA-xxxx-yyyy-zzzz"), dep("django")]}, 1, ""

    monkeypatch.setattr(audit_pins, "run_pip_audit", pip_audit)

    status = audit_pins.main([str(ROOT / "constraints.txt")])

    assert status == 1 and audited == [ROOT / "constraints.txt"]
    printed = capsys.readouterr().out
    assert printed.startswith("pip-audit FAILED (") and "GHSA-xxxx-yyyy-zzzz" in printed
