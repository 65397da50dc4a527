"""Deadlines and budgets of a run: RESEARCH_RUN_TIMEOUT, RESEARCH_PLANNER_TIMEOUT, RESEARCH_MAX_TOKENS_PER_RUN.

A hung upstream is a scripted reply that waits 30 s before its first byte; each test ends well before
that, so "it ended in under 10 s" shows the bound held without racing the clock. Runs that must get some
research done before their deadline get 3 s (research until 2.25 s), ample for the fakes on a busy machine.
"""

from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from datascraper.errors import DeadlineExceeded, UpstreamTimeout
from datascraper.models_config import ResearchConfig
from datascraper.plan_schemas import GapReport, QueryAnalysis
from datascraper.providers.structured import parse_structured
from datascraper.research_engine.state import Deadline
from datascraper.schemas import SourcesEvent, UsageLedger
from tests.datascraper.research_support import (
    CORROBORATING,
    answer_text,
    gaps,
    is_analysis,
    is_gap_report,
    is_synthesis,
    of_type,
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
from tests.fakes.openai_server import JsonReply, Sentence, TextReply, Usage, has_web_search

HANG_S = 30.0
ENDED_WELL_BEFORE_THE_HANG_S = 10.0
REUTERS = ("https://www.reuters.com/apple-analysts", "Analysts on Apple - Reuters")
APPLE_ANALYSTS = sub("What do analysts say about Apple?")
APPLE_GUIDANCE = sub("What revenue guidance did Apple give for fiscal 2026?")
HUNG_ANALYSIS = JsonReply(QueryAnalysis(needs_decomposition=True), first_byte_delay=HANG_S)




class Stopwatch:
    def __enter__(self) -> Stopwatch:
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.seconds = time.monotonic() - self.started


# --- RESEARCH_RUN_TIMEOUT: the research deadline ------------------------------------------------------


async def test_a_hung_sub_question_is_cut_at_the_research_deadline_and_the_run_answers_from_the_others(
    fake_openai, research_env
):
    research_env(RESEARCH_RUN_TIMEOUT="3")
    script_analysis(fake_openai, sub("Slow question?"), sub("Fast question?"))
    fake_openai.script(TextReply(["Slow."], first_byte_delay=HANG_S), when=searched("Slow question"))
    fake_openai.script(TextReply([Sentence("Fast.", cites=[REUTERS])]), when=searched("Fast question"))
    script_synthesis(fake_openai, "Fast [1]; the slow part could not be researched in time.")

    with Stopwatch() as clock:
        events = await run("Two things?", mode="research")

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    assert sorted(steps(events)) == [
        ("q1", "failed", "web_search"),
        ("q1", "started", "web_search"),
        ("q2", "done", "web_search"),
        ("q2", "started", "web_search"),
    ]
    assert [(r.n, r.complete) for r in of_type(events, "round")] == [(1, False)]
    assert requests_of(fake_openai, is_gap_report) == []  # no time left to judge the findings
    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "Not answered: the research ran out of time before it was done." in synthesis.input_text
    summary = summary_of(events)
    # Cut short with a sub-question unanswered and one source: the answer says its evidence is weak.
    answer, note = summary.answer.split("\n\n")
    assert answer == "Fast [1]; the slow part could not be researched in time."
    assert note.startswith("Note: low confidence") and "q1: not answered (deadline_exceeded)" in note
    assert summary.rounds[-1]["stop_reason"] == "deadline"
    assert [(entry.n, entry.stop_reason) for entry in summary.trace] == [(1, "deadline")]
    assert summary.signals["stop_reason"] == "deadline" and summary.signals["failed"] == 1


async def test_a_gap_detector_still_running_at_the_research_deadline_stops_research_with_deadline(
    fake_openai, research_env
):
    research_env(RESEARCH_RUN_TIMEOUT="3")  # the planner's own timeout (20 s) is the farther bound
    script_analysis(fake_openai, APPLE_ANALYSTS)
    fake_openai.script(JsonReply(gaps(5, APPLE_GUIDANCE), first_byte_delay=HANG_S), when=is_gap_report, times=None)

    with Stopwatch() as clock:
        events = await run("What do analysts say about Apple?", mode="research")

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    assert requests_of(fake_openai, searched("fiscal 2026")) == []
    summary = summary_of(events)
    assert summary.rounds[-1]["stop_reason"] == "deadline"
    assert summary.signals["gap_detector_fallback"] is None
    assert len(requests_of(fake_openai, is_synthesis)) == 1 and summary.answer


async def test_an_analyzer_still_running_at_the_research_deadline_gives_way_to_one_web_search_in_any_mode(
    fake_openai, research_env
):
    research_env(RESEARCH_RUN_TIMEOUT="2")
    fake_openai.script(HUNG_ANALYSIS, when=is_analysis)

    with Stopwatch() as clock:
        events = await run("How is Apple doing?", mode="research")

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    assert [is_analysis(r) for r in fake_openai.requests] == [True, False]
    assert fake_openai.requests[1].has_web_search
    summary = summary_of(events)
    assert summary.mode == "quick" and summary.answer
    assert summary.signals["analysis_fallback"] == "deadline_exceeded"


# --- RESEARCH_RUN_TIMEOUT: the hard deadline ------------------------------------------------------------


async def test_a_quick_search_hung_past_the_hard_deadline_ends_with_deadline_exceeded(fake_openai, research_env):
    research_env(RESEARCH_RUN_TIMEOUT="1")
    fake_openai.script(TextReply(first_byte_delay=HANG_S), when=has_web_search)

    with Stopwatch() as clock:
        events, error = await run_until_error("How did Apple's last quarter go?", mode="quick")

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    assert isinstance(error, DeadlineExceeded) and error.code == "deadline_exceeded"
    assert answer_text(events) == ""
    assert error.summary is not None and error.summary.signals["error"] == "deadline_exceeded"


async def test_a_quick_answer_cut_by_the_hard_deadline_keeps_the_text_already_streamed(fake_openai, research_env):
    research_env(RESEARCH_RUN_TIMEOUT="1")
    fake_openai.script(TextReply(["Apple grew revenue by six percent."], delta_delay=HANG_S), when=has_web_search)

    events, error = await run_until_error("How did Apple's last quarter go?", mode="quick")

    assert isinstance(error, DeadlineExceeded)
    assert answer_text(events) == "Apple "  # the first delta, before the stream went quiet


async def test_a_fast_path_quote_and_its_fallback_search_are_bounded_by_the_run_deadline(
    fake_openai, market_data, research_env
):
    research_env(RESEARCH_RUN_TIMEOUT="1")
    fake_openai.script(TextReply(first_byte_delay=HANG_S), when=has_web_search)

    with Stopwatch() as clock:
        events, error = await run_until_error("What is HANG trading at?")  # the fake Yahoo never answers

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    assert steps(events) == [("q1", "started", "market_data"), ("q1", "fallback", "web_search")]
    assert isinstance(error, DeadlineExceeded)
    assert error.summary is not None and error.summary.signals["quote_fallback"] is not None


async def test_an_answer_that_cannot_be_finished_by_the_hard_deadline_sends_its_sources_then_deadline_exceeded(
    fake_openai, research_env
):
    research_env(RESEARCH_RUN_TIMEOUT="3")
    script_analysis(fake_openai, APPLE_ANALYSTS)
    fake_openai.script(TextReply([well_sourced("Most analysts rate Apple a buy.")]), when=has_web_search)
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1]. More follows.", delta_delay=HANG_S)

    with Stopwatch() as clock:
        events, error = await run_until_error("What do analysts say about Apple?", mode="research")

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    assert isinstance(error, DeadlineExceeded)
    assert answer_text(events) == "Analys"
    assert isinstance(events[-1], SourcesEvent) and [s.url for s in events[-1].sources] == [
        url for url, _ in CORROBORATING
    ]
    assert error.summary is not None and error.summary.rounds[-1]["stop_reason"] == "complete"


# --- RESEARCH_PLANNER_TIMEOUT ---------------------------------------------------------------------------


async def test_a_planner_call_is_bounded_in_total_with_its_retries(fake_openai, research_env):
    research_env(RESEARCH_PLANNER_TIMEOUT="0.5", RESEARCH_REQUEST_TIMEOUT="60", RESEARCH_MAX_RETRIES="2")
    fake_openai.set_default(JsonReply(first_byte_delay=HANG_S))
    ledger = UsageLedger()

    with Stopwatch() as clock, pytest.raises(UpstreamTimeout):
        await parse_structured("gpt-5.4-mini", "Plan the research.", "How did Apple do?", QueryAnalysis, ledger)

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    assert ledger.calls == 1


async def test_a_hung_analyzer_falls_back_to_one_web_search_after_the_planner_timeout(fake_openai, research_env):
    research_env(RESEARCH_PLANNER_TIMEOUT="0.5")
    fake_openai.script(HUNG_ANALYSIS, when=is_analysis, times=None)

    with Stopwatch() as clock:
        events = await run("Compare Apple and Microsoft's revenue growth")

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    *analyses, search = fake_openai.requests
    assert analyses and all(is_analysis(r) for r in analyses)
    assert search.has_web_search and search.started_at > analyses[-1].started_at
    summary = summary_of(events)
    assert summary.mode == "quick" and summary.answer
    assert summary.signals["analysis_fallback"] == "upstream_timeout"


async def test_in_mode_research_a_hung_analyzer_gives_way_to_researching_the_question_as_asked(
    fake_openai, research_env
):
    research_env(RESEARCH_PLANNER_TIMEOUT="0.5", RESEARCH_MAX_ITERATIONS="1")
    question = "Compare Apple and Microsoft's revenue growth"
    fake_openai.script(HUNG_ANALYSIS, when=is_analysis, times=None)

    with Stopwatch() as clock:
        events = await run(question, mode="research")

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    [plan] = of_type(events, "plan")
    assert [(q.id, q.question) for q in plan.sub_questions] == [("q1", question)]
    assert steps(events) == [("q1", "started", "web_search"), ("q1", "done", "web_search")]
    summary = summary_of(events)
    assert summary.mode == "research" and summary.signals["analysis_fallback"] == "upstream_timeout"


async def test_a_hung_gap_detector_stops_the_loop_with_gap_detector_failed(fake_openai, research_env):
    research_env(RESEARCH_PLANNER_TIMEOUT="0.5")
    script_analysis(fake_openai, APPLE_ANALYSTS)
    fake_openai.script(JsonReply(gaps(5, APPLE_GUIDANCE), first_byte_delay=HANG_S), when=is_gap_report, times=None)

    with Stopwatch() as clock:
        events = await run("What do analysts say about Apple?", mode="research")

    assert clock.seconds < ENDED_WELL_BEFORE_THE_HANG_S
    assert [(r.n, r.complete) for r in of_type(events, "round")] == [(1, False)]
    summary = summary_of(events)
    assert summary.rounds[-1]["stop_reason"] == "gap_detector_failed"
    assert summary.signals["gap_detector_fallback"] == "upstream_timeout"
    assert len(requests_of(fake_openai, is_synthesis)) == 1 and summary.answer


# --- RESEARCH_MAX_TOKENS_PER_RUN ------------------------------------------------------------------------
#
# Token counts are scripted: analysis 200, the first round's search 500, the gap detector 300.


def script_costed_round(fake) -> None:
    fake.script(
        JsonReply(QueryAnalysis(needs_decomposition=True, sub_questions=[APPLE_ANALYSTS]), usage=Usage(100, 100)),
        when=is_analysis,
    )
    fake.script(
        TextReply([Sentence("Most analysts rate Apple a buy.", cites=[REUTERS])], usage=Usage(300, 200)),
        when=searched("analysts say about Apple"),
    )
    fake.script(JsonReply(gaps(5, APPLE_GUIDANCE), usage=Usage(200, 100)), when=is_gap_report)
    script_synthesis(fake, "Analysts rate Apple a buy [1].")


async def test_a_token_budget_spent_by_the_first_round_stops_research_and_the_answer_is_still_written(
    fake_openai, research_env
):
    research_env(RESEARCH_MAX_TOKENS_PER_RUN="600")  # 700 after the first round's search
    script_costed_round(fake_openai)

    events = await run("What do analysts say about Apple?", mode="research")

    assert requests_of(fake_openai, is_gap_report) == []
    assert [(r.n, r.complete, r.follow_ups) for r in of_type(events, "round")] == [(1, False, [])]
    summary = summary_of(events)
    assert summary.rounds[-1]["stop_reason"] == "token_budget"
    assert summary.signals["stop_reason"] == "token_budget" and summary.signals["completed_early"] is True
    # One source after one round: the budget stopped research short of trusted evidence, and the answer says so.
    answer, note = summary.answer.split("\n\n")
    assert answer == "Analysts rate Apple a buy [1]." and note.startswith("Note: low confidence")


async def test_a_token_budget_reached_by_the_gap_detector_starts_no_further_round(fake_openai, research_env):
    research_env(RESEARCH_MAX_TOKENS_PER_RUN="1000")  # 1,000 once the gap detector has answered
    script_costed_round(fake_openai)

    events = await run("What do analysts say about Apple?", mode="research")

    assert len(requests_of(fake_openai, is_gap_report)) == 1
    assert requests_of(fake_openai, searched("fiscal 2026")) == []  # its follow-up did not run
    assert [(r.n, r.follow_ups) for r in of_type(events, "round")] == [(1, [])]
    summary = summary_of(events)
    assert summary.rounds[-1]["stop_reason"] == "token_budget" and summary.rounds[-1]["score"] == 5.0
    assert len(requests_of(fake_openai, is_synthesis)) == 1 and summary.answer


async def test_a_run_within_its_token_budget_researches_as_usual(fake_openai, research_env):
    research_env(RESEARCH_MAX_TOKENS_PER_RUN="1000000")
    script_costed_round(fake_openai)
    script_gaps(fake_openai, GapReport(complete=True, score=9))

    events = await run("What do analysts say about Apple?", mode="research")

    assert len(requests_of(fake_openai, searched("fiscal 2026"))) == 1
    assert [r["stop_reason"] for r in summary_of(events).rounds] == [None, "complete"]


# --- configuration and the deadline object --------------------------------------------------------------


def test_deadlines_and_budget_default_to_the_contract():
    config = ResearchConfig.from_env({})
    assert (config.run_timeout_s, config.planner_timeout_s, config.max_tokens_per_run) == (300.0, 20.0, None)


def test_deadlines_and_budget_are_read_from_the_environment():
    config = ResearchConfig.from_env(
        {"RESEARCH_RUN_TIMEOUT": "120", "RESEARCH_PLANNER_TIMEOUT": "7.5", "RESEARCH_MAX_TOKENS_PER_RUN": "50000"}
    )
    assert (config.run_timeout_s, config.planner_timeout_s, config.max_tokens_per_run) == (120.0, 7.5, 50000)
    assert ResearchConfig.from_env({"RESEARCH_MAX_TOKENS_PER_RUN": " "}).max_tokens_per_run is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("RESEARCH_RUN_TIMEOUT", "0"),
        ("RESEARCH_RUN_TIMEOUT", "-5"),
        ("RESEARCH_RUN_TIMEOUT", "inf"),
        ("RESEARCH_RUN_TIMEOUT", "soon"),
        ("RESEARCH_PLANNER_TIMEOUT", "0"),
        ("RESEARCH_PLANNER_TIMEOUT", "nan"),
        ("RESEARCH_MAX_TOKENS_PER_RUN", "0"),
        ("RESEARCH_MAX_TOKENS_PER_RUN", "-1"),
        ("RESEARCH_MAX_TOKENS_PER_RUN", "1.5"),
    ],
)
def test_invalid_deadlines_and_budgets_are_refused(name, value):
    with pytest.raises(ValidationError):
        ResearchConfig.from_env({name: value})


def test_the_answer_keeps_a_quarter_of_the_run_at_most_a_minute():
    assert Deadline(300).reserve_s == 60.0
    assert Deadline(2).reserve_s == 0.5


def test_research_ends_before_the_hard_deadline():
    now = time.monotonic()
    assert not Deadline(4, started=now).research_expired
    researched_past = Deadline(4, started=now - 3.5)  # research ended at 3 s, the answer may run to 4 s
    assert researched_past.research_expired and not researched_past.expired
    assert researched_past.research_remaining() == 0 and 0 < researched_past.remaining() <= 0.5
    over = Deadline(4, started=now - 5)
    assert over.expired and over.remaining() == 0
