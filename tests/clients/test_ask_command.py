"""`manage.py ask` drives the research router from a terminal: progress on stderr, the answer on stdout."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from datascraper.errors import UpstreamTimeout
from datascraper.schemas import (
    DeltaEvent,
    PlanEvent,
    PlannedSubQuestion,
    ResearchEvent,
    ResearchQuery,
    RoundEvent,
    RunSummary,
    Source,
    SourcesEvent,
    StatusEvent,
    StepEvent,
)
from datascraper.trace_schemas import RunConfidence
from tests.clients.test_openai_compat import EXPECTED_SOURCES, EXPECTED_TEXT, script_answer
from tests.datascraper.citations.test_run_verification import script_cited_answer
from tests.fakes.openai_server import ErrorReply, TextReply, has_web_search

SOURCE = Source(n=1, title="Apple 10-K", url="https://investor.apple.com/10k", kind="web")


def manage_ask(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, in a child process that inherits the fake server's environment."""
    return subprocess.run(
        [sys.executable, "manage.py", "ask", *args],
        cwd=settings.BASE_DIR,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def ask(*args: str) -> tuple[str, str]:
    stdout, stderr = StringIO(), StringIO()
    call_command("ask", *args, stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue()


def scripted_router(events: list[ResearchEvent], *, then_raise: Exception | None = None, seen: list | None = None):
    async def run_research(query: ResearchQuery) -> AsyncIterator[ResearchEvent]:
        if seen is not None:
            seen.append(query)
        for event in events:
            yield event
        if then_raise is not None:
            raise then_raise

    return run_research


RESEARCH_EVENTS: list[ResearchEvent] = [
    StatusEvent(phase="analyzing", label="Reading the question"),
    PlanEvent(
        needs_decomposition=True,
        sub_questions=[
            PlannedSubQuestion(id="q1", question="Apple revenue FY2024?", type="numerical", route="market_data"),
            PlannedSubQuestion(id="q2", question="Why did services grow?", type="qualitative", route="web_search"),
        ],
    ),
    StatusEvent(phase="researching", label="Researching", detail="2 sub-questions"),
    StepEvent(sub_question_id="q1", state="started", route="market_data"),
    StepEvent(sub_question_id="q1", state="done", route="market_data", elapsed_ms=120),
    StepEvent(sub_question_id="q2", state="fallback", route="web_search", elapsed_ms=900),
    RoundEvent(n=1, complete=False, gaps=["margins"], confidence=0.52, shallow=True),
    RoundEvent(n=2, complete=False, confidence=0.81),
    StatusEvent(phase="synthesizing", label="Writing the answer"),
    DeltaEvent(text="Revenue was $391B "),
    DeltaEvent(text="[1]."),
    SourcesEvent(sources=[SOURCE]),
    RunSummary(
        mode="research",
        answer="Revenue was $391B [1].",
        sources=[SOURCE],
        timings={"total_ms": 2500},
        confidence=RunConfidence(
            score=0.81,
            coverage=1,
            credibility=0.86,
            diversity=0.7,
            evidence=0.6,
            consistency=1,
            shallow=False,
            threshold=0.75,
            rounds=2,
            progression=[0.52, 0.81],
            refinements=1,
            uncertain=[],
            summary="2 research rounds; evidence confidence 0.52 → 0.81; 1 follow-up added (0 for weak evidence).",
        ),
    ),
]


def test_progress_goes_to_stderr_and_the_answer_with_sources_to_stdout(monkeypatch):
    monkeypatch.setattr("chat.management.commands.ask.run_research", scripted_router(RESEARCH_EVENTS))

    stdout, stderr = ask("How did Apple do?")

    assert stdout == "Revenue was $391B [1].\n\nSources:\n[1] Apple 10-K — https://investor.apple.com/10k\n"
    assert stderr.splitlines() == [
        "» Reading the question",
        "  plan: 2 sub-questions",
        "    q1. Apple revenue FY2024? [market_data]",
        "    q2. Why did services grow? [web_search]",
        "» Researching — 2 sub-questions",
        "  … q1 started (market_data)",
        "  ✓ q1 done (market_data, 120 ms)",
        "  ↻ q2 fallback (web_search, 900 ms)",
        "  round 1: gaps: margins (confidence 0.52, shallow)",
        "  round 2: more research needed (confidence 0.81)",
        "» Writing the answer",
        "» done: research path, 2.5 s, 0 model calls, 0 tokens",
        "» research: 2 research rounds; evidence confidence 0.52 → 0.81; 1 follow-up added (0 for weak evidence).",
    ]


def test_mode_and_time_zone_options_reach_the_router(monkeypatch):
    seen: list[ResearchQuery] = []
    monkeypatch.setattr("chat.management.commands.ask.run_research", scripted_router(RESEARCH_EVENTS, seen=seen))

    ask("  How did Apple do?  ", "--mode", "research", "--timezone", "Asia/Tokyo")

    assert [(q.question, q.mode, q.history, q.timezone) for q in seen] == [
        ("How did Apple do?", "research", [], "Asia/Tokyo")
    ]


def test_an_unknown_time_zone_is_refused_before_any_model_call(fake_openai):
    with pytest.raises(CommandError, match="unknown time zone"):
        ask("How did Apple do?", "--timezone", "Mars/Base")

    assert fake_openai.requests == []


def test_failure_keeps_the_partial_answer_and_raises_the_error_code(monkeypatch):
    partial = [DeltaEvent(text="Revenue was"), SourcesEvent(sources=[SOURCE])]
    monkeypatch.setattr(
        "chat.management.commands.ask.run_research", scripted_router(partial, then_raise=UpstreamTimeout())
    )
    stdout = StringIO()

    with pytest.raises(CommandError) as raised:
        call_command("ask", "How did Apple do?", stdout=stdout, stderr=StringIO())

    assert str(raised.value) == f"upstream_timeout: {UpstreamTimeout.default_message}"
    assert stdout.getvalue() == "Revenue was\n\nSources:\n[1] Apple 10-K — https://investor.apple.com/10k\n"


@pytest.mark.parametrize("question", ["", "   ", "x" * 8001], ids=["empty", "blank", "too-long"])
def test_unusable_question_is_refused_before_any_model_call(fake_openai, question):
    with pytest.raises(CommandError):
        ask(question)

    assert fake_openai.requests == []


def test_answers_through_the_real_router_in_a_child_process(fake_openai):
    script_answer(fake_openai)

    result = manage_ask("How did Apple do last quarter?")

    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED_TEXT + EXPECTED_SOURCES + "\n"
    assert "»" in result.stderr, "phases are reported on stderr"
    assert " INFO " not in result.stderr, "server-side log records stay out of the terminal below -v 2"
    assert any(r.has_web_search for r in fake_openai.requests)


def test_upstream_failure_exits_non_zero_with_the_error_code(fake_openai):
    fake_openai.script(ErrorReply(500), when=has_web_search, times=None)

    result = manage_ask("How did Apple do last quarter?")

    assert result.returncode == 1
    assert "upstream_error" in result.stderr
    assert "Traceback" not in result.stderr


def test_unconfigured_provider_exits_non_zero_with_the_error_code(no_provider):
    result = manage_ask("How did Apple do last quarter?")

    assert result.returncode == 1
    assert result.stdout == ""
    assert "provider_not_configured" in result.stderr


def test_interrupted_answer_stream_still_prints_what_arrived(fake_openai):
    fake_openai.script(TextReply(interrupt="drop", after_deltas=3), when=has_web_search, times=None)

    result = manage_ask("How did Apple do last quarter?")

    assert result.returncode == 1
    assert result.stdout.strip(), "the partial answer is kept on stdout"
    assert "Traceback" not in result.stderr


def test_the_citations_checked_after_the_answer_are_summed_up_on_stderr(fake_openai, verifying, page_server):
    script_cited_answer(fake_openai, page_server)

    stdout, stderr = ask("How did Apple do last year?", "--mode", "quick")

    assert stdout.startswith("Apple's revenue was $391.04 billion in fiscal 2024. [1]")
    assert stdout.count("Sources:") == 1
    lines = stderr.splitlines()
    assert "  citations checked: 1 supported, 1 unsupported, 1 unreachable" in lines
    assert lines[-1].startswith("» done: quick path")
