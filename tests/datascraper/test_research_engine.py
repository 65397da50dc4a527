"""The research router end to end: analysis, routing, rounds, stop rules, fallbacks and the cited answer.

Every run goes through the real pipeline, the real OpenAI SDK against the fake Responses server, and the
real MCP client against the market data server in memory over the fake yfinance.
"""

from __future__ import annotations

import logging
import time

import pytest

from datascraper.errors import StreamInterrupted
from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult
from datascraper.research_engine import bypass, executor, run_research
from datascraper.research_engine.periods import fiscal_fetch
from datascraper.schemas import MarketDataKind, ResearchQuery, SourcesEvent
from tests.datascraper.research_support import (
    MARKER,
    answer_text,
    gaps,
    is_analysis,
    is_gap_report,
    is_synthesis,
    of_type,
    requests_of,
    run,
    script_analysis,
    script_gaps,
    script_synthesis,
    script_well_sourced_searches,
    searched,
    steps,
    sub,
    summary_of,
    well_sourced,
)
from tests.fakes.openai_server import ErrorReply, JsonReply, Sentence, TextReply, has_web_search

REUTERS = ("https://www.reuters.com/apple-analysts", "Analysts on Apple - Reuters")
CNBC = ("https://www.cnbc.com/microsoft-analysts", "Analysts on Microsoft - CNBC")
FT = ("https://www.ft.com/microsoft-guidance", "Microsoft guidance - FT")

COMPARISON = "Compare Apple and Microsoft's revenue growth and what analysts say about each"
APPLE_REVENUE = sub("What was Apple's annual revenue in fiscal 2021-2024?", "numerical", ["AAPL"], "income_statement")
MICROSOFT_REVENUE = sub("What was Microsoft's annual revenue in fiscal 2021-2024?", "numerical", ["MSFT"], "income_statement")
APPLE_ANALYSTS = sub("What do analysts say about Apple in June 2025?")
MICROSOFT_ANALYSTS = sub("What do analysts say about Microsoft in June 2025?")
WHICH_GREW_FASTER = sub("Which company's revenue grew faster?", "analytical")
MICROSOFT_GUIDANCE = sub("What revenue guidance did Microsoft give for fiscal 2026?")
APPLE_GUIDANCE = sub("What revenue guidance did Apple give for fiscal 2026?")


def script_search(fake, question, *sentences: Sentence, delay: float = 0.0, times: int = 1) -> None:
    fake.script(TextReply(list(sentences), first_byte_delay=delay), when=searched(question), times=times)


async def malformed_market_data(tickers: list[str], data: MarketDataKind, **_: object) -> MarketDataFinding:
    """What `fetch_market_data` returns when the server's payload does not fit its model (no figures, no times)."""
    [symbol] = tickers
    url = f"https://finance.yahoo.com/quote/{symbol}"
    tool = "get_quote" if data == "quote" else "get_financial_statement"
    result = ToolResult(symbol=symbol, tool=tool, data={"symbol": symbol, "url": url}, url=url, title=symbol)
    return MarketDataFinding(tickers=[symbol], data=data, results=[result])


# --- the bypass ------------------------------------------------------------------------------------------


async def test_a_simple_price_question_is_answered_from_the_quote_without_any_model_call(fake_openai, market_data):
    events = await run("What is AAPL trading at?")

    assert fake_openai.requests == []
    assert [e.type for e in events] == ["status", "plan", "step", "step", "delta", "sources", "summary"]
    assert steps(events) == [("q1", "started", "market_data"), ("q1", "done", "market_data")]
    assert answer_text(events) == (
        "AAPL last traded at 196.45 USD, down 3.03 USD (-1.52%) from the previous close of 199.48 USD, "
        "as of 2025-06-13 20:00 UTC [1]."
    )
    [source] = of_type(events, "sources")[0].sources
    assert (source.n, source.kind, source.url) == (1, "market_data", "https://finance.yahoo.com/quote/AAPL")
    summary = summary_of(events)
    assert summary.mode == "quick" and summary.usage.calls == 0
    assert summary.plan["needs_decomposition"] is False
    assert summary.signals["fast_path"] is True
    assert summary.signals["numbers"] == {"checked": 4, "computed": 0, "unmatched": 0, "unmatched_values": []}
    assert ("AAPL", "quoteSummary") in market_data.calls


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (
            "What's Tesla's market cap?",
            "Tesla (TSLA) has a market capitalization of",
        ),
        ("How much is MSFT up today?", "MSFT last traded "),
    ],
)
async def test_market_cap_and_day_change_questions_take_the_fast_path_too(fake_openai, market_data, question, answer):
    events = await run(question, mode="quick")

    assert fake_openai.requests == []
    assert answer_text(events).startswith(answer)
    assert summary_of(events).signals["numbers"]["unmatched"] == 0


async def test_a_day_change_answer_gives_the_move_from_the_previous_close_and_never_claims_today(
    fake_openai, market_data
):
    events = await run("How much is AAPL up today?")

    assert answer_text(events) == (
        "AAPL last traded down 3.03 USD (-1.52%) from the previous close of 199.48 USD, at 196.45 USD, "
        "as of 2025-06-13 20:00 UTC [1]."
    )
    assert fake_openai.requests == []


async def test_a_fast_path_quote_that_crashes_falls_back_to_one_web_search(
    fake_openai, market_data, monkeypatch, caplog
):
    monkeypatch.setattr(bypass, "fetch_market_data", malformed_market_data)
    fake_openai.script(TextReply(["Apple trades near $196."]), when=has_web_search)

    events = await run("What is AAPL trading at?")

    assert steps(events) == [("q1", "started", "market_data"), ("q1", "fallback", "web_search")]
    assert answer_text(events) == "Apple trades near $196."
    assert summary_of(events).signals["quote_fallback"] == "internal_error"
    assert any(record.levelno == logging.ERROR and record.exc_info for record in caplog.records)


async def test_a_fast_path_quote_that_fails_falls_back_to_one_web_search(fake_openai, market_data_down):
    fake_openai.script(TextReply(["Apple trades near $196."]), when=has_web_search)

    events = await run("What is Apple's stock price?")

    assert steps(events) == [("q1", "started", "market_data"), ("q1", "fallback", "web_search")]
    assert answer_text(events) == "Apple trades near $196."
    assert [r.has_web_search for r in fake_openai.requests] == [True]
    signals = summary_of(events).signals
    assert signals["fast_path"] is True and signals["quote_fallback"] == "market_data_unavailable"
    assert signals["fallbacks"] == 1


async def test_a_ticker_without_data_falls_back_to_a_web_search(fake_openai, market_data):
    events = await run("What is EMPTY trading at?")

    assert steps(events)[-1] == ("q1", "fallback", "web_search")
    assert summary_of(events).signals["quote_fallback"] == "no_data"
    assert len(requests_of(fake_openai, has_web_search)) == 1


async def test_quick_mode_is_a_single_web_search(fake_openai, market_data):
    events = await run("How did Apple's last quarter go?", mode="quick")

    [request] = fake_openai.requests
    assert request.has_web_search and not request.is_structured
    summary = summary_of(events)
    assert summary.mode == "quick" and summary.plan == {}
    assert of_type(events, "plan") == [] and of_type(events, "step") == []
    assert summary.signals["fast_path"] is False and summary.signals["sub_questions"]["total"] == 0


async def test_auto_mode_asks_the_analyzer_and_answers_directly_when_it_needs_no_decomposition(fake_openai):
    script_analysis(fake_openai, needs_decomposition=False)

    events = await run("How did Apple do last quarter?")

    assert [is_analysis(r) for r in fake_openai.requests] == [True, False]
    assert fake_openai.requests[1].has_web_search
    [plan] = of_type(events, "plan")
    assert plan.payload() == {"needs_decomposition": False, "sub_questions": []}
    assert [e.phase for e in of_type(events, "status")] == ["analyzing", "synthesizing"]
    summary = summary_of(events)
    assert summary.mode == "quick" and summary.usage.calls == 2


async def test_research_mode_skips_the_fast_path_and_researches_even_a_simple_question(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, needs_decomposition=False)

    events = await run("What is AAPL trading at?", mode="research")

    [plan] = of_type(events, "plan")
    assert plan.payload()["sub_questions"] == [
        {"id": "q1", "question": "What is AAPL trading at?", "type": "qualitative", "route": "web_search"}
    ]
    assert summary_of(events).mode == "research"
    assert len(requests_of(fake_openai, is_analysis)) == 1
    assert len(requests_of(fake_openai, is_synthesis)) == 1


async def test_research_mode_with_a_failed_analysis_researches_the_question_as_asked(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    fake_openai.script(ErrorReply(400), when=is_analysis)
    script_search(fake_openai, COMPARISON, well_sourced("Apple grew 2%, Microsoft 16%."))
    script_synthesis(fake_openai, "Microsoft grew faster [1].")

    events = await run(COMPARISON, mode="research")

    [plan] = of_type(events, "plan")
    assert plan.payload() == {
        "needs_decomposition": True,
        "sub_questions": [{"id": "q1", "question": COMPARISON, "type": "qualitative", "route": "web_search"}],
    }
    assert steps(events) == [("q1", "started", "web_search"), ("q1", "done", "web_search")]
    assert len(requests_of(fake_openai, is_synthesis)) == 1
    summary = summary_of(events)
    assert summary.mode == "research" and summary.answer == "Microsoft grew faster [1]."
    assert summary.signals["analysis_fallback"] == "upstream_error"


# --- the full research run -------------------------------------------------------------------------------


async def test_a_comparison_is_researched_concurrently_in_rounds_and_answered_with_resolving_citations(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="2")
    script_analysis(
        fake_openai, APPLE_REVENUE, MICROSOFT_REVENUE, APPLE_ANALYSTS, MICROSOFT_ANALYSTS, WHICH_GREW_FASTER
    )
    script_search(fake_openai, "analysts say about Apple", Sentence("Most analysts rate Apple a buy.", cites=[REUTERS]), delay=0.15)
    script_search(
        fake_openai,
        "analysts say about Microsoft",
        Sentence("Analysts are bullish on Microsoft's cloud.", cites=[CNBC, REUTERS]),
        delay=0.15,
    )
    script_search(fake_openai, "Microsoft give for fiscal 2026", Sentence("Microsoft guided to double-digit growth.", cites=[FT]))
    script_gaps(
        fake_openai,
        gaps(5, MICROSOFT_GUIDANCE, missing=["Microsoft's guidance"]),
        gaps(6.5, APPLE_GUIDANCE, missing=["Apple's guidance"]),
    )
    script_synthesis(
        fake_openai,
        "Apple's revenue was $391.04 billion in fiscal 2024 [1], Microsoft's $242.44 billion [2].",
        "Analysts like both [3][4].",
        "Microsoft guided to double-digit growth [5].",
        "Apple's guidance was not found [9].",
    )

    events = await run(COMPARISON)

    # the plan: numbers to market data, opinions to the web, the comparison to synthesis
    plan = of_type(events, "plan")[0]
    assert [(q.id, q.type, q.route) for q in plan.sub_questions] == [
        ("q1", "numerical", "market_data"),
        ("q2", "numerical", "market_data"),
        ("q3", "qualitative", "web_search"),
        ("q4", "qualitative", "web_search"),
        ("q5", "analytical", "synthesis"),
    ]
    # sub-questions ran at once, and numbers came through MCP
    apple_search, microsoft_search = (requests_of(fake_openai, searched(q))[0] for q in ("about Apple", "about Microsoft"))
    assert apple_search.overlaps(microsoft_search)
    assert ("AAPL", "income:yearly") in market_data.calls and ("MSFT", "income:yearly") in market_data.calls
    assert sorted(s for s in steps(events) if s[1] != "started") == [
        ("q1", "done", "market_data"),
        ("q2", "done", "market_data"),
        ("q3", "done", "web_search"),
        ("q4", "done", "web_search"),
        ("q6", "done", "web_search"),
    ]
    # two rounds, the second at the cap with gaps left; the follow-up proposed last is not run
    rounds = of_type(events, "round")
    assert [(r.n, r.complete, r.gaps, r.follow_ups) for r in rounds] == [
        (1, False, ["Microsoft's guidance"], [MICROSOFT_GUIDANCE.question]),
        (2, False, ["Apple's guidance"], []),
    ]
    assert requests_of(fake_openai, searched("Apple give for fiscal 2026")) == []
    # one merged source list: market data first (plan order), web deduplicated by URL
    sources = of_type(events, "sources")[-1].sources
    assert [(s.n, s.kind, s.url) for s in sources] == [
        (1, "market_data", "https://finance.yahoo.com/quote/AAPL/financials"),
        (2, "market_data", "https://finance.yahoo.com/quote/MSFT/financials"),
        (3, "web", REUTERS[0]),
        (4, "web", CNBC[0]),
        (5, "web", FT[0]),
    ]
    # the synthesizer saw the numbered list and the verbatim data, and searched nothing
    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "[1] Yahoo Finance — AAPL income statement (annual)" in synthesis.input_text
    assert "391035000000" in synthesis.input_text
    assert "Analysts are bullish on Microsoft's cloud. [4] [3]" in synthesis.input_text
    # every marker resolves: the one naming no source was dropped as it streamed
    text = answer_text(events)
    assert "[9]" not in text
    assert {int(n) for n in MARKER.findall(text)} == {1, 2, 3, 4, 5}
    summary = summary_of(events)
    assert summary.mode == "research" and summary.answer == text
    assert summary.rounds[-1]["stop_reason"] == "max_iterations"
    assert [r["score"] for r in summary.rounds] == [5.0, 6.5]
    assert summary.signals["citations"] == {"markers": 6, "resolved": 5, "unresolved": 1, "uncited_sources": []}
    assert summary.signals["numbers"]["unmatched"] == 0
    assert [e.phase for e in of_type(events, "status")] == [
        "analyzing",
        "researching",
        "evaluating",
        "researching",
        "evaluating",
        "synthesizing",
    ]
    assert set(summary.timings) >= {
        "analyzing_ms",
        "researching_ms",
        "evaluating_ms",
        "synthesizing_ms",
        "total_ms",
        "first_token_ms",
    }


async def test_follow_ups_join_the_plan_before_their_round_runs_and_the_run_stores_the_whole_plan(
    fake_openai, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="3")
    script_analysis(fake_openai, APPLE_ANALYSTS, WHICH_GREW_FASTER)
    script_well_sourced_searches(fake_openai)
    script_gaps(fake_openai, gaps(5, MICROSOFT_GUIDANCE), gaps(9, complete=True))

    events = await run(COMPARISON)

    plans = of_type(events, "plan")
    assert [[(q.id, q.question, q.type, q.route) for q in plan.sub_questions] for plan in plans] == [
        [
            ("q1", APPLE_ANALYSTS.question, "qualitative", "web_search"),
            ("q2", WHICH_GREW_FASTER.question, "analytical", "synthesis"),
        ],
        [
            ("q1", APPLE_ANALYSTS.question, "qualitative", "web_search"),
            ("q2", WHICH_GREW_FASTER.question, "analytical", "synthesis"),
            ("q3", MICROSOFT_GUIDANCE.question, "qualitative", "web_search"),
        ],
    ]
    assert all(plan.needs_decomposition for plan in plans)
    order = [(e.type, getattr(e, "sub_question_id", "")) for e in events if e.type in ("plan", "round", "step")]
    assert order == [
        ("plan", ""),
        ("step", "q1"),
        ("step", "q1"),
        ("round", ""),
        ("plan", ""),
        ("step", "q3"),
        ("step", "q3"),
        ("round", ""),
    ]
    assert summary_of(events).plan == plans[-1].payload()


async def test_step_events_arrive_while_other_sub_questions_are_still_running(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, sub("Fast question?"), sub("Slow question?"))
    script_search(fake_openai, "Fast question", Sentence("Fast."))
    script_search(fake_openai, "Slow question", Sentence("Slow."), delay=0.5)

    fast_done_at = None
    async for event in run_research(ResearchQuery(question="Two things?", mode="research")):
        if event.type == "step" and (event.sub_question_id, event.state) == ("q1", "done"):
            fast_done_at = time.monotonic()

    [slow] = requests_of(fake_openai, searched("Slow question"))
    assert fast_done_at is not None and slow.ended_at is not None
    assert fast_done_at < slow.ended_at  # the step was out before the slow search had finished


async def test_concurrency_is_capped_by_research_concurrency(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1", RESEARCH_CONCURRENCY="2")
    script_analysis(fake_openai, *(sub(f"Question {n}?") for n in range(4)))
    fake_openai.script(TextReply(["Found."], first_byte_delay=0.05), when=has_web_search, times=None)

    events = await run("Four things?", mode="research")

    assert fake_openai.max_concurrency() == 2
    assert len([s for s in steps(events) if s[1] == "done"]) == 4


async def test_sub_questions_are_capped_at_research_max_sub_questions(fake_openai, research_env):
    research_env(RESEARCH_MAX_SUB_QUESTIONS="2", RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, *(sub(f"Question {n}?") for n in range(4)))

    events = await run("Many things?")

    assert [q.id for q in of_type(events, "plan")[0].sub_questions] == ["q1", "q2"]
    assert len(requests_of(fake_openai, searched("Question "))) == 2


# --- fallbacks ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (JsonReply(raw='{"needs_decomposition": "maybe"'), "invalid_model_output"),
        (JsonReply({"needs_decomposition": True, "sub_questions": [{"question": "x"}]}, validate=False), "invalid_model_output"),
        (ErrorReply(400), "upstream_error"),
    ],
)
async def test_a_failed_analysis_falls_back_to_one_web_search(fake_openai, reply, code):
    fake_openai.script(reply, when=is_analysis)

    events = await run(COMPARISON)

    # The one web search is the one started with the analyzer, kept.
    assert sorted(map(is_analysis, fake_openai.requests)) == [False, True]
    assert len(requests_of(fake_openai, has_web_search)) == 1
    summary = summary_of(events)
    assert summary.mode == "quick" and answer_text(events)
    assert summary.signals["analysis_fallback"] == code
    assert summary.signals["speculative_search"]["outcome"] == "kept"


@pytest.mark.parametrize(
    ("ticker", "reason"),
    [("EMPTY", "no_data"), ("BOOM", "upstream_error")],
)
async def test_market_data_without_data_falls_back_to_a_web_search(fake_openai, market_data, research_env, ticker, reason):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, sub(f"What is {ticker}'s revenue?", "numerical", [ticker], "income_statement"))
    script_search(fake_openai, f"{ticker}'s revenue", Sentence("Revenue was $1 billion.", cites=[REUTERS]))

    events = await run(f"How big is {ticker}?")

    assert steps(events) == [
        ("q1", "started", "market_data"),
        ("q1", "fallback", "web_search"),
        ("q1", "done", "web_search"),
    ]
    assert [s.kind for s in of_type(events, "sources")[-1].sources] == ["web"]
    signals = summary_of(events).signals
    assert signals["fallbacks"] == 1 and signals["fallback_reasons"] == {reason: 1}
    assert signals["web_hits"] == 1 and signals["market_data_hits"] == 0


async def test_unreachable_market_data_falls_back_to_a_web_search(fake_openai, market_data_down, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_REVENUE)

    events = await run("How big is Apple?")

    assert steps(events)[1:] == [("q1", "fallback", "web_search"), ("q1", "done", "web_search")]
    assert summary_of(events).signals["fallback_reasons"] == {"market_data_unavailable": 1}


async def test_a_numerical_sub_question_without_a_ticker_is_routed_to_the_web(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, sub("What is the US CPI?", "numerical", [], "quote"))

    events = await run("How is inflation?")

    assert of_type(events, "plan")[0].sub_questions[0].route == "web_search"
    assert steps(events) == [("q1", "started", "web_search"), ("q1", "done", "web_search")]


async def test_a_failed_web_search_sub_question_is_a_failed_step_and_the_run_still_answers(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_REVENUE, APPLE_ANALYSTS)
    fake_openai.script(ErrorReply(400), when=searched("about Apple"))
    script_synthesis(fake_openai, "Apple's revenue was $391.04 billion [1]; analyst views were not found.")

    events = await run("How is Apple doing?")

    assert ("q2", "failed", "web_search") in steps(events)
    assert ("q1", "done", "market_data") in steps(events)
    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "Not answered: the research for it failed (upstream_error)." in synthesis.input_text
    summary = summary_of(events)
    assert summary.answer.startswith("Apple's revenue was $391.04 billion [1]")
    assert summary.signals["failed"] == 1


async def test_a_sub_question_over_its_time_budget_fails_and_the_run_still_answers(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1", RESEARCH_SUB_QUESTION_TIMEOUT="0.2")
    script_analysis(fake_openai, sub("Slow question?"), sub("Fast question?"))
    script_search(fake_openai, "Slow question", Sentence("Slow."), delay=2)

    events = await run("Two things?")

    assert ("q1", "failed", "web_search") in steps(events) and ("q2", "done", "web_search") in steps(events)
    assert summary_of(events).answer


async def test_a_sub_question_that_crashes_is_a_failed_step_and_the_run_still_answers(
    fake_openai, research_env, monkeypatch, caplog
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    monkeypatch.setattr(fiscal_fetch, "fetch_market_data", malformed_market_data)
    script_analysis(fake_openai, APPLE_REVENUE, APPLE_ANALYSTS)
    script_search(fake_openai, "about Apple", Sentence("Most analysts rate Apple a buy.", cites=[REUTERS]))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1]; its revenue could not be retrieved.")

    events = await run("How is Apple doing?")

    assert sorted(steps(events)) == [
        ("q1", "failed", "market_data"),
        ("q1", "started", "market_data"),
        ("q2", "done", "web_search"),
        ("q2", "started", "web_search"),
    ]
    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "Not answered: the research for it failed (internal_error)." in synthesis.input_text
    summary = summary_of(events)
    assert summary.answer.startswith("Analysts rate Apple a buy [1]")
    assert summary.signals["failed"] == 1
    # The executor's own record: asyncio may log unrelated errors when garbage from earlier tests is collected.
    [crash] = [r for r in caplog.records if r.levelno == logging.ERROR and r.name == executor.logger.name]
    assert crash.exc_info is not None and "q1" in crash.getMessage()


async def test_a_sub_question_timing_out_after_a_fallback_fails_on_the_web_route_with_its_reason(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="1", RESEARCH_SUB_QUESTION_TIMEOUT="0.5")
    script_analysis(fake_openai, sub("What is EMPTY's revenue?", "numerical", ["EMPTY"], "income_statement"))
    script_search(fake_openai, "EMPTY's revenue", Sentence("Revenue was $1 billion."), delay=3)

    events = await run("How big is EMPTY?")

    assert steps(events) == [
        ("q1", "started", "market_data"),
        ("q1", "fallback", "web_search"),
        ("q1", "failed", "web_search"),
    ]
    signals = summary_of(events).signals
    assert signals["failed"] == 1 and signals["fallback_reasons"] == {"no_data": 1}


async def test_a_failed_gap_detector_ends_the_loop_and_the_findings_are_answered(fake_openai, research_env):
    script_analysis(fake_openai, APPLE_ANALYSTS)
    fake_openai.script(JsonReply(raw="{"), when=is_gap_report)

    events = await run("What do analysts say about Apple?", mode="research")

    assert [(r.n, r.complete, r.gaps) for r in of_type(events, "round")] == [(1, False, [])]
    assert len(requests_of(fake_openai, is_gap_report)) == 1
    assert len(requests_of(fake_openai, is_synthesis)) == 1
    summary = summary_of(events)
    assert summary.rounds[-1]["stop_reason"] == "gap_detector_failed"
    assert summary.signals["gap_detector_fallback"] == "invalid_model_output"
    assert summary.signals["stop_reason"] == "gap_detector_failed"


async def test_a_synthesis_that_breaks_off_sends_its_sources_before_the_error(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, APPLE_ANALYSTS)
    script_search(fake_openai, "about Apple", Sentence("Most analysts rate Apple a buy.", cites=[REUTERS]))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1]. More follows here.", interrupt="drop", after_deltas=3)

    events = []
    with pytest.raises(StreamInterrupted):
        async for event in run_research(ResearchQuery(question="Apple?", mode="research")):
            events.append(event)

    assert events[-1] == SourcesEvent(sources=events[-1].sources)
    assert [s.url for s in events[-1].sources] == [REUTERS[0]]
    assert answer_text(events)


# --- stop rules ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reports", "reason", "rounds"),
    [
        ([gaps(9, complete=True)], "complete", 1),
        ([gaps(8.5, MICROSOFT_GUIDANCE)], "threshold", 1),
        ([gaps(5, MICROSOFT_GUIDANCE), gaps(5.3, APPLE_GUIDANCE)], "no_improvement", 2),
        ([gaps(5)], "no_follow_ups", 1),
        ([gaps(5, APPLE_ANALYSTS)], "no_follow_ups", 1),  # the only follow-up was asked already
        ([gaps(3, MICROSOFT_GUIDANCE), gaps(5, APPLE_GUIDANCE), gaps(7, sub("More?"))], "max_iterations", 3),
    ],
)
async def test_research_stops_at_the_first_stop_rule_that_holds(fake_openai, reports, reason, rounds):
    script_analysis(fake_openai, APPLE_ANALYSTS)
    script_well_sourced_searches(fake_openai)  # evidence trusted from the first round: the detector decides
    script_gaps(fake_openai, *reports)

    events = await run("What do analysts say about Apple?", mode="research")

    summary = summary_of(events)
    assert len(summary.rounds) == len(of_type(events, "round")) == rounds
    assert summary.rounds[-1]["stop_reason"] == reason
    assert [r["stop_reason"] for r in summary.rounds[:-1]] == [None] * (rounds - 1)
    assert summary.signals["stop_reason"] == reason and summary.signals["rounds"] == rounds
    assert summary.signals["completed_early"] is (rounds < 3)
    # the trace and the round events name the same rule; earlier rounds went on for the detector's gaps
    assert [entry.stop_reason for entry in summary.trace] == [r["stop_reason"] for r in summary.rounds]
    assert [e.stop_reason for e in of_type(events, "round")] == [r["stop_reason"] for r in summary.rounds]
    assert [entry.goes_on_because for entry in summary.trace[:-1]] == ["gaps"] * (rounds - 1)
    # one search per sub-question run: the first round's, then one follow-up per further round
    assert len(requests_of(fake_openai, has_web_search)) == rounds
    assert len(requests_of(fake_openai, is_gap_report)) == rounds
