"""Provider failures a user can act on end a run with their own code, at once; a refusal ends as a refusal;
a hung web search is noticed once; what a run spends is counted as the provider bills it. The real pipeline
against the strict fake OpenAI server."""

from __future__ import annotations

import time
from datetime import date

import pytest

from datascraper.errors import ModelRefused, ModelUnavailable, ProviderAuthFailed, ProviderQuotaExceeded
from tests.datascraper.research_support import (
    answer_text,
    gaps,
    is_gap_report,
    is_synthesis,
    requests_of,
    run,
    run_until_error,
    script_analysis,
    script_gaps,
    script_synthesis,
    searched,
    steps,
    sub,
    summary_of,
    well_sourced,
)
from tests.fakes.openai_server import NO_CREDIT, ErrorReply, RefusalReply, TextReply, Usage, has_web_search

TODAY = date(2026, 11, 26)
HANG_S = 30.0




async def test_a_retired_research_model_ends_the_run_naming_the_model_and_its_setting(fake_openai, research_env):
    research_env(RESEARCH_MODEL="gpt-5.2-chat-latest")  # the old default, shut down on 2026-08-10
    fake_openai.today = TODAY

    _, error = await run_until_error("How did Apple's last quarter go?", mode="quick")

    assert isinstance(error, ModelUnavailable) and error.code == "model_unavailable"
    assert "'gpt-5.2-chat-latest'" in error.message and "RESEARCH_MODEL" in error.message
    # The Responses API answers a model it does not serve with a 400 `model_not_found` (once a 404 here):
    # the code decides, and the 400 is not retried.
    assert [request.status for request in fake_openai.requests] == [400]


async def test_a_retired_planner_model_falls_back_to_one_web_search_and_the_signals_name_it(fake_openai, research_env):
    research_env(RESEARCH_PLANNER_MODEL="gpt-5-mini", RESEARCH_SPECULATIVE_SEARCH="0")
    fake_openai.today = date(2026, 12, 11)  # gpt-5-mini's announced shutdown

    summary = summary_of(await run("Compare Apple and Microsoft's margins"))

    assert summary.mode == "quick" and summary.answer
    assert summary.signals["analysis_fallback"] == "model_unavailable"
    assert [request.status for request in fake_openai.requests] == [400, 200]


@pytest.mark.parametrize(
    ("failure", "error_type", "code"),
    [
        (NO_CREDIT, ProviderQuotaExceeded, "provider_quota_exceeded"),
        (ErrorReply(401), ProviderAuthFailed, "provider_auth_failed"),
    ],
    ids=["no-credit", "rejected-key"],
)
async def test_an_account_failure_ends_the_run_after_one_request_without_a_fallback(
    fake_openai, research_env, failure, error_type, code
):
    research_env(RESEARCH_MAX_RETRIES="2", RESEARCH_SPECULATIVE_SEARCH="0")
    fake_openai.set_default(failure)

    _, error = await run_until_error("Compare Apple and Microsoft's margins")

    assert isinstance(error, error_type) and error.code == code
    assert len(fake_openai.requests) == 1, "neither retried nor answered by a fallback search"


async def test_an_account_without_credit_ends_a_quick_answer_with_its_code_not_as_a_broken_stream(fake_openai):
    fake_openai.set_default(NO_CREDIT)  # streamed: HTTP 200, then `error` (insufficient_quota) and `response.failed`

    events, error = await run_until_error("How did Apple's last quarter go?", mode="quick")

    assert isinstance(error, ProviderQuotaExceeded) and error.code == "provider_quota_exceeded"
    assert "billing" in error.message
    assert [request.status for request in fake_openai.requests] == [200]
    assert answer_text(events) == ""


@pytest.mark.parametrize("where", ["search", "synthesis"])
async def test_credit_that_runs_out_inside_a_stream_ends_the_run_at_once_with_its_code(fake_openai, research_env, where):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, sub("What did Apple say about services?"))
    if where == "synthesis":
        fake_openai.script(TextReply([well_sourced("Services grew.")]), when=has_web_search)
        script_gaps(fake_openai, gaps(9, complete=True))
    fake_openai.set_default(NO_CREDIT)  # every other call: in the stream when streamed, else a 429

    _, error = await run_until_error("How is Apple's services business doing?", mode="research")

    assert isinstance(error, ProviderQuotaExceeded) and error.code == "provider_quota_exceeded"
    assert len(requests_of(fake_openai, has_web_search)) == 1, "no other search was tried"
    # After a search without credit, no planner call either: it would fail the same way.
    assert len(requests_of(fake_openai, is_gap_report)) == len(requests_of(fake_openai, is_synthesis))
    assert [r.status for r in requests_of(fake_openai, is_synthesis)] == ([200] if where == "synthesis" else [])


async def test_a_refused_answer_ends_as_a_refusal_not_as_an_empty_answer(fake_openai):
    fake_openai.script(RefusalReply("I can't give personalised investment advice."), when=has_web_search)

    events, error = await run_until_error("Should I put my savings in NVDA?", mode="quick")

    assert isinstance(error, ModelRefused) and error.code == "model_refused"
    assert error.message == "I can't give personalised investment advice."
    assert answer_text(events) == ""


async def test_synthesis_sends_no_tools_and_searches_send_only_web_search(fake_openai):
    script_analysis(fake_openai, sub("What is Apple's strategy in services?"))
    script_gaps(fake_openai, gaps(9, complete=True))
    fake_openai.script(TextReply([well_sourced("Services grew.")]), when=has_web_search)
    script_synthesis(fake_openai, "Apple's services grew [1].")

    await run("How is Apple's services strategy going?", mode="research")

    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "tools" not in synthesis.body
    assert all(r.tool_types == ["web_search"] for r in requests_of(fake_openai, has_web_search))


async def test_hosted_searches_and_cached_input_are_counted_as_billed(fake_openai, research_env):
    research_env(RESEARCH_MAX_TOKENS_PER_RUN="100000")
    cached = Usage(input_tokens=10_000, output_tokens=100, cached_tokens=9_000)
    fake_openai.script(TextReply([well_sourced("Revenue rose.")], usage=cached), when=has_web_search)

    summary = summary_of(await run("How did Apple's last quarter go?", mode="quick"))

    usage = summary.usage.by_model["gpt-5.4"]
    assert (usage.web_search_calls, usage.cached_tokens) == (1, 9_000)
    assert usage.budget_tokens == pytest.approx(1_000 + 900 + 100)


async def test_a_hung_web_search_is_noticed_once_and_later_rounds_send_no_new_search(fake_openai, research_env):
    research_env(RESEARCH_SUB_QUESTION_TIMEOUT="1", RESEARCH_MAX_ITERATIONS="3", RESEARCH_RUN_TIMEOUT="60")
    script_analysis(fake_openai, sub("What did Apple say about guidance?"))
    fake_openai.script(TextReply(first_byte_delay=HANG_S), when=has_web_search, times=None)
    script_gaps(
        fake_openai,
        gaps(3, sub("What did analysts say about Apple's guidance?")),
        gaps(3, sub("What did Apple's CFO say on the call?")),
    )
    script_synthesis(fake_openai, "Apple's guidance could not be found.")

    started = time.monotonic()
    events = await run("What did Apple guide for next quarter?", mode="research")

    assert time.monotonic() - started < HANG_S / 2
    assert len(requests_of(fake_openai, has_web_search)) == 1, "no search was sent after the first one hung"
    assert [state for _, state, _ in steps(events) if state in ("done", "failed")] == ["failed", "failed", "failed"]
    summary = summary_of(events)
    assert summary.answer
    assert summary.usage.by_model["gpt-5.4"].calls == 2, "one hung search and the synthesis: refused searches cost nothing"
    assert searched("guidance")(requests_of(fake_openai, has_web_search)[0])
