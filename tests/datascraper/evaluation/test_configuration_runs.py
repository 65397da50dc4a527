"""A configuration's process: its lines relayed, its environment exactly the one given, its failure its own,
and past its timeout it is stopped as Ctrl-C stops it, or killed when it will not stop."""

from __future__ import annotations

import sys

import pytest

from datascraper.evaluation import configuration_runs
from datascraper.evaluation.configuration_runs import default_timeout, run_configuration
from datascraper.models_config import ResearchConfig


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_child_that_fails_is_failed_with_its_last_line_and_every_line_relayed() -> None:
    lines: list[str] = []
    failing = python(
        "import os, sys\n"
        "print('configuration', os.environ['RESEARCH_MODEL'], 'PATH' in os.environ, flush=True)\n"
        "print('CommandError: provider_not_configured: set OPENAI_API_KEY to evaluate the answers.', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )

    run = run_configuration(failing, {"RESEARCH_MODEL": "gpt-5.4-mini"}, timeout_s=60, on_line=lines.append)

    assert (run.status, run.returncode) == ("failed", 1)
    assert run.error == "provider_not_configured: set OPENAI_API_KEY to evaluate the answers."
    assert lines == ["configuration gpt-5.4-mini False", f"CommandError: {run.error}"]


def test_a_child_that_completes_is_completed() -> None:
    run = run_configuration(python("print('report.md')"), {}, timeout_s=60, on_line=lambda _: None)

    assert (run.status, run.returncode, run.error) == ("completed", 0, None)


def test_a_child_past_its_timeout_is_stopped_as_ctrl_c_stops_it_and_writes_what_finished() -> None:
    lines: list[str] = []
    slow = python(
        "import sys, time\n"
        "print('started', flush=True)\n"
        "try:\n    time.sleep(60)\n"
        "except KeyboardInterrupt:\n    print('report of what finished', flush=True)\n    sys.exit(130)\n"
    )

    run = run_configuration(slow, {}, timeout_s=2, on_line=lines.append)

    assert (run.status, run.returncode) == ("timed_out", 130)
    assert run.error == "stopped after 2 s (its timeout)"
    assert lines == ["started", "report of what finished"]


def test_a_child_that_will_not_stop_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(configuration_runs, "STOP_GRACE_S", 0.5)
    stubborn = python("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('started', flush=True)\ntime.sleep(60)\n")

    run = run_configuration(stubborn, {}, timeout_s=1, on_line=lambda _: None)

    assert (run.status, run.returncode) == ("timed_out", -9)


def test_the_default_timeout_lets_every_row_take_its_whole_run_and_judge_budgets() -> None:
    research = ResearchConfig(run_timeout_s=300)

    assert default_timeout(5, 2, research) == configuration_runs.START_AND_REPORT_S + 3 * (300 + 90)
