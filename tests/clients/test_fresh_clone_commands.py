"""A newcomer's first commands, as the README writes them, in a process with nothing set: no key, no
DJANGO_* settings, a database not yet migrated. Each answers in words with the README's exit status, never a
traceback; the server alone refuses to start without a secret key, in one line naming the setting.

The far ends are loopback addresses that answer nothing (a closed port for the market data server, the
citation fetcher's refusal of private addresses), so no test reaches the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from tests.processes import free_port

ROOT = Path(settings.BASE_DIR)
NOT_LISTENING = f"http://127.0.0.1:{free_port()}"


def fresh_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """What a shell on a fresh machine has: a PATH and a home; the database a file not yet migrated."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "MARKET_DATA_MCP_URL": f"{NOT_LISTENING}/mcp",
        **extra,
    }


def manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=fresh_environment(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=90,
    )


def assert_no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


def test_ask_without_a_key_says_which_setting_is_missing(tmp_path):
    result = manage(tmp_path, "ask", "How did Apple do last quarter?", "--mode", "auto", "--timezone", "Europe/Paris")

    assert_no_traceback(result)
    assert result.returncode == 1
    assert "provider_not_configured" in result.stderr and "OPENAI_API_KEY" in result.stderr


def test_evaluate_without_a_key_says_which_setting_is_missing(tmp_path):
    result = manage(
        tmp_path,
        "evaluate",
        "datascraper/evaluation/questions.jsonl",
        "--concurrency",
        "2",
        "--out",
        str(tmp_path / "e"),
    )

    assert_no_traceback(result)
    assert result.returncode == 1
    assert "OPENAI_API_KEY" in result.stderr


def test_doctor_json_lists_every_check_with_nothing_set(tmp_path):
    result = manage(tmp_path, "doctor", "--json", "--timeout", "5", "--page-url", f"{NOT_LISTENING}/about")

    assert_no_traceback(result)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    statuses = {check["name"]: check["status"] for check in report["checks"]}
    assert report["ok"] is False
    assert statuses["key"] == "fail"
    assert statuses["database"] == "fail"  # not migrated yet: the fix says to run migrate


def test_doctor_reports_a_retired_model_as_its_own_check_instead_of_refusing_to_run(tmp_path, fake_openai):
    result = manage(
        tmp_path,
        "doctor",
        "--json",
        "--timeout",
        "5",
        "--page-url",
        f"{NOT_LISTENING}/about",
        OPENAI_API_KEY="test-key-fresh-clone",
        OPENAI_BASE_URL=fake_openai.base_url,
        RESEARCH_MODEL="gpt-5.2-chat-latest",
    )

    assert_no_traceback(result)
    assert result.returncode == 1
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    research = checks["model RESEARCH_MODEL"]
    assert research["status"] == "fail"
    assert "gpt-5.2-chat-latest" in research["detail"] and "RESEARCH_MODEL" in (research["fix"] or research["detail"])


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"RESEARCH_CONCURRENCY": "1000"}, "Invalid research settings (concurrency)"),
        ({"EVAL_JUDGE_MODEL": "antropic:claude-x"}, "EVAL_JUDGE_MODEL='antropic:claude-x' names an unknown provider"),
    ],
)
def test_doctor_runs_on_a_setting_that_stops_every_other_command_and_reports_it(tmp_path, setting, said):
    result = manage(tmp_path, "doctor", "--json", "--timeout", "5", "--page-url", f"{NOT_LISTENING}/about", **setting)

    assert_no_traceback(result)
    assert result.returncode == 1
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    assert checks["configuration"]["status"] == "fail" and checks["configuration"]["detail"].startswith(said)
    assert checks["configuration"]["fix"]
    assert checks["database"]["status"] == "fail"  # the checks that need no settings still ran


@pytest.mark.parametrize("command", [("create_api_key", "alice"), ("brief", "00000000-0000-4000-8000-000000000000")])
def test_a_command_before_migrate_says_to_migrate(tmp_path, command):
    result = manage(tmp_path, *command)

    assert_no_traceback(result)
    assert result.returncode == 1
    assert "manage.py migrate" in result.stderr


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"RESEARCH_CONCURRENCY": "1000"}, "Invalid research settings (concurrency)"),
        ({"RESEARCH_MODEL": "gogle:gemini-x"}, "RESEARCH_MODEL='gogle:gemini-x' names an unknown provider 'gogle'"),
    ],
)
def test_a_bad_setting_stops_a_command_in_one_line_naming_it(tmp_path, setting, said):
    result = manage(tmp_path, "migrate", **setting)

    assert_no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(f"Configuration error: {said}")


@pytest.mark.parametrize("debug", ["", "0"])
def test_the_server_refuses_to_start_without_a_secret_key_in_one_line(tmp_path, debug):
    result = subprocess.run(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(free_port())],
        cwd=ROOT,
        env=fresh_environment(tmp_path, DJANGO_DEBUG=debug),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert_no_traceback(result)
    assert result.stderr.strip().splitlines()[-1] == (
        "Refusing to serve: DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off."
    )
