"""Speculative search: in mode auto the single web search starts while the analyzer decides; it is kept
when the analyzer sees no need to decompose, and cancelled (its HTTP stream closed) when it plans research.

Timings here are margins for ordering (a reply scripted 5 s late is one the run must not wait for), never
speed assertions: those are in benchmarks/research_overhead.py.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import ValidationError

from datascraper.errors import DeadlineExceeded, UpstreamError
from datascraper.models_config import ResearchConfig
from datascraper.plan_schemas import QueryAnalysis
from datascraper.research_engine import run_research
from datascraper.schemas import ResearchQuery
from tests.datascraper.research_support import (
    answer_text,
    is_analysis,
    is_synthesis,
    of_type,
    requests_of,
    run,
    script_analysis,
    script_synthesis,
    searched,
    sub,
    summary_of,
    well_sourced,
)
from tests.fakes.openai_server import ErrorReply, JsonReply, RecordedRequest, Sentence, TextReply

SIMPLE = "What did Apple announce at its latest product event?"
COMPLEX = "Compare Apple and Microsoft's revenue growth and what analysts say about each"
EVENT_ANSWER = [
    Sentence("Apple announced the iPhone 17 and new AirPods.", cites=[("https://www.apple.com/newsroom/event", "Apple Newsroom")]),
    Sentence("The event was held on September 9.", cites=[("https://www.reuters.com/apple-event", "Reuters")]),
]
SPECULATIVE_TASK = "speculative web search"


def script_verdict(fake, *sub_questions, delay: float) -> None:
    analysis = QueryAnalysis(needs_decomposition=bool(sub_questions), sub_questions=list(sub_questions))
    fake.script(JsonReply(analysis, first_byte_delay=delay), when=is_analysis)


def the_whole_question(question: str):
    """The speculative search: a web search of the question as asked."""
    return lambda request: request.has_web_search and request.input_text.endswith(question)


def speculative_tasks() -> list[asyncio.Task]:
    return [task for task in asyncio.all_tasks() if task.get_name() == SPECULATIVE_TASK and not task.done()]


async def finished(request: RecordedRequest, within_s: float = 2.0) -> None:
    """Wait for the fake's side of `request` to end (it notices a closed connection on its own thread)."""
    deadline = time.monotonic() + within_s
    while request.ended_at is None and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


# --- kept ---------------------------------------------------------------------------------------------------


async def test_a_simple_question_is_searched_while_the_analyzer_decides_and_the_search_is_kept(fake_openai):
    script_verdict(fake_openai, delay=0.3)
    fake_openai.script(TextReply(EVENT_ANSWER), when=the_whole_question(SIMPLE))

    events = await run(SIMPLE)

    [analysis] = requests_of(fake_openai, is_analysis)
    [search] = requests_of(fake_openai, searched(SIMPLE))
    assert len(fake_openai.requests) == 2  # the analyzer and the one search: nothing else
    assert search.started_at < analysis.ended_at  # concurrent: the search did not wait for the verdict
    assert search.ended_at < analysis.ended_at  # here it even finished first
    assert [e.type for e in events] == ["status", "plan", "status", "delta", "sources", "summary"]
    assert [e.phase for e in of_type(events, "status")] == ["analyzing", "synthesizing"]
    assert of_type(events, "plan")[0].needs_decomposition is False
    # What arrived while the analyzer ran goes out at once, as one delta.
    assert answer_text(events) == (
        "Apple announced the iPhone 17 and new AirPods. [1] The event was held on September 9. [2]"
    )
    assert [s.url for s in of_type(events, "sources")[0].sources] == [
        "https://www.apple.com/newsroom/event",
        "https://www.reuters.com/apple-event",
    ]
    summary = summary_of(events)
    assert summary.mode == "quick" and summary.answer == answer_text(events)
    assert summary.usage.by_model["gpt-5.4"].calls == 1
    speculation = summary.signals["speculative_search"]
    assert speculation["outcome"] == "kept" and speculation["elapsed_ms"] >= 250
    assert speculative_tasks() == []


async def test_a_kept_search_still_streaming_goes_on_after_what_was_buffered(fake_openai):
    script_verdict(fake_openai, delay=0.15)
    sentences = [f"Sentence {n} about the event." for n in range(8)]
    fake_openai.script(TextReply(sentences, delta_delay=0.02), when=the_whole_question(SIMPLE))

    events = await run(SIMPLE)

    deltas = of_type(events, "delta")
    assert len(deltas) > 2  # the buffered head at once, then the rest as it came
    assert answer_text(events) == " ".join(sentences)
    [analysis] = requests_of(fake_openai, is_analysis)
    [search] = requests_of(fake_openai, searched(SIMPLE))
    assert search.started_at < analysis.ended_at < search.ended_at
    assert summary_of(events).signals["speculative_search"]["outcome"] == "kept"


async def test_a_failed_analysis_keeps_the_search_started_with_it(fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="0")
    fake_openai.script(ErrorReply(500, first_byte_delay=0.1), when=is_analysis)
    fake_openai.script(TextReply(EVENT_ANSWER), when=the_whole_question(SIMPLE))

    events = await run(SIMPLE)

    assert len(requests_of(fake_openai, searched(SIMPLE))) == 1
    summary = summary_of(events)
    assert summary.signals["analysis_fallback"] == "upstream_error"
    assert summary.signals["speculative_search"]["outcome"] == "kept"
    assert answer_text(events).startswith("Apple announced the iPhone 17")


async def test_a_kept_search_that_fails_ends_the_run_as_the_single_search_would(fake_openai, research_env):
    research_env(RESEARCH_MAX_RETRIES="0")
    script_verdict(fake_openai, delay=0.2)
    fake_openai.script(ErrorReply(500), when=the_whole_question(SIMPLE))

    with pytest.raises(UpstreamError) as raised:
        await run(SIMPLE)

    summary = raised.value.summary
    assert summary is not None and summary.signals["error"] == "upstream_error"
    assert summary.signals["speculative_search"]["outcome"] == "kept"
    assert speculative_tasks() == []


async def test_a_kept_search_that_breaks_off_sends_its_sources_before_the_error(fake_openai):
    script_verdict(fake_openai, delay=0.2)
    fake_openai.script(
        TextReply(EVENT_ANSWER, interrupt="failed", after_deltas=14, chunk_chars=10), when=the_whole_question(SIMPLE)
    )
    events = []

    with pytest.raises(UpstreamError):
        async for event in run_research(ResearchQuery(question=SIMPLE)):
            events.append(event)

    assert [e.type for e in events][-2:] == ["delta", "sources"]
    assert [s.n for s in events[-1].sources] == [1]
    assert "[1]" in answer_text(events)


async def test_a_kept_search_is_bound_by_the_runs_hard_deadline(fake_openai, research_env):
    research_env(RESEARCH_RUN_TIMEOUT="1")
    script_verdict(fake_openai, delay=0.05)
    fake_openai.script(TextReply(EVENT_ANSWER, first_byte_delay=5), when=the_whole_question(SIMPLE))
    started = time.monotonic()

    with pytest.raises(DeadlineExceeded):
        await run(SIMPLE)

    assert time.monotonic() - started < 3
    [search] = requests_of(fake_openai, searched(SIMPLE))
    await finished(search)
    assert search.client_closed
    assert speculative_tasks() == []


# --- cancelled ----------------------------------------------------------------------------------------------


async def test_a_complex_question_cancels_the_search_at_once_and_researches(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    apple, microsoft = sub("What do analysts think of Apple?"), sub("What do analysts think of Microsoft?")
    script_verdict(fake_openai, apple, microsoft, delay=0.2)
    # A search that would take 5 s: a run that waited for it, or left it open, would show.
    fake_openai.script(TextReply(EVENT_ANSWER, first_byte_delay=5), when=the_whole_question(COMPLEX))
    fake_openai.script(TextReply([well_sourced("Analysts like both.")]), when=searched("analysts think of"), times=2)
    script_synthesis(fake_openai, "Both grew; analysts like both [1].")
    started = time.monotonic()

    events = await run(COMPLEX)

    assert time.monotonic() - started < 3
    [speculative] = requests_of(fake_openai, the_whole_question(COMPLEX))
    await finished(speculative)
    assert speculative.client_closed and speculative.status is None  # closed by us before any reply
    [analysis] = requests_of(fake_openai, is_analysis)
    assert speculative.started_at < analysis.ended_at
    assert len(requests_of(fake_openai, searched("analysts think of"))) == 2
    assert len(requests_of(fake_openai, is_synthesis)) == 1
    assert [e.type for e in events][:3] == ["status", "plan", "checkpoint"]
    assert of_type(events, "plan")[0].needs_decomposition is True
    assert of_type(events, "status")[-1].phase == "synthesizing"
    assert answer_text(events) == "Both grew; analysts like both [1]."
    summary = summary_of(events)
    speculation = summary.signals["speculative_search"]
    assert speculation["outcome"] == "cancelled" and speculation["completed"] is False
    assert (speculation["input_tokens"], speculation["output_tokens"]) == (0, 0)  # none reported before the close
    assert 150 <= speculation["elapsed_ms"] < 2000
    assert summary.mode == "research"
    assert speculative_tasks() == []


async def test_a_cancelled_run_cancels_the_speculative_search(fake_openai):
    script_verdict(fake_openai, delay=5)
    fake_openai.script(TextReply(EVENT_ANSWER, first_byte_delay=5), when=the_whole_question(SIMPLE))
    run_task = asyncio.create_task(run(SIMPLE))
    deadline = time.monotonic() + 3
    while len(fake_openai.requests) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert len(fake_openai.requests) == 2

    run_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run_task

    assert speculative_tasks() == []
    [search] = requests_of(fake_openai, searched(SIMPLE))
    await finished(search)
    assert search.client_closed


# --- turned off ---------------------------------------------------------------------------------------------


async def test_with_speculative_search_off_nothing_is_searched_before_the_analyzer_replies(fake_openai, research_env):
    research_env(RESEARCH_SPECULATIVE_SEARCH="0")
    script_verdict(fake_openai, delay=0.2)
    fake_openai.script(TextReply(EVENT_ANSWER), when=the_whole_question(SIMPLE))

    events = await run(SIMPLE)

    [analysis] = requests_of(fake_openai, is_analysis)
    [search] = requests_of(fake_openai, searched(SIMPLE))
    assert search.started_at >= analysis.ended_at
    assert answer_text(events).startswith("Apple announced the iPhone 17")
    assert summary_of(events).signals["speculative_search"] is None


@pytest.mark.parametrize("mode", ["quick", "research"])
async def test_only_mode_auto_speculates(fake_openai, research_env, mode):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, sub("What did Apple announce?"))

    events = await run(SIMPLE, mode=mode)

    if mode == "quick":  # the one search, with no analyzer to wait for
        assert requests_of(fake_openai, is_analysis) == []
        assert len(requests_of(fake_openai, the_whole_question(SIMPLE))) == 1
    else:  # research only: the question is never searched as a whole
        assert requests_of(fake_openai, the_whole_question(SIMPLE)) == []
    assert summary_of(events).signals["speculative_search"] is None


def test_the_setting_defaults_to_on_and_rejects_what_is_not_a_switch():
    assert ResearchConfig.from_env({}).speculative_search is True
    assert ResearchConfig.from_env({"RESEARCH_SPECULATIVE_SEARCH": "0"}).speculative_search is False
    with pytest.raises(ValidationError):
        ResearchConfig.from_env({"RESEARCH_SPECULATIVE_SEARCH": "sometimes"})
