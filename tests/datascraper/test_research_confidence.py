"""Evidence confidence steering the research loop, end to end: the real pipeline against the fake OpenAI
server, whose planner and search replies are scripted.

Shallow or low-confidence evidence keeps research going with targeted follow-ups even when the gap
detector calls the findings complete; trusted evidence lets it stop; limits still win. Contradictions
are validated, carried by `round` events and shown to the synthesizer; every round leaves a trace entry,
checkpointed so a resumed run's trace is whole; an answer whose evidence stayed weak says so.
"""

from __future__ import annotations

import json

from datascraper.plan_schemas import GapReport, QueryAnalysis
from datascraper.research_engine import run_research
from datascraper.schemas import ResearchQuery
from datascraper.trace_schemas import Contradiction, PlanChange
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
    script_analysis,
    script_gaps,
    script_synthesis,
    script_well_sourced_searches,
    searched,
    sub,
    summary_of,
)
from tests.fakes.openai_server import JsonReply, Sentence, TextReply, Usage

QUESTION = "What do analysts say about Apple?"
ANALYSTS = sub("What do analysts say about Apple in June 2025?")
REUTERS = ("https://www.reuters.com/technology/apple-analysts/", "Analysts on Apple - Reuters")
CONFIRMATION = (
    "What do analysts say about Apple in June 2025? Confirm or correct this with sources independent of "
    "reuters.com: regulators' filings, the company's investor relations, exchanges or major financial news."
)
INDEPENDENT = CORROBORATING[1:]  # FT and the SEC


def script_one_reuters_source(fake, *, confirmed_by=INDEPENDENT) -> None:
    """The first search cites Reuters alone; a follow-up asking for independent sources cites `confirmed_by`."""
    confirmation = TextReply([Sentence("Analysts confirm their buy ratings.", cites=list(confirmed_by))])
    fake.script(confirmation, when=searched("Confirm or correct"))
    first = TextReply([Sentence("Most analysts rate Apple a buy.", cites=[REUTERS])])
    fake.script(first, when=searched("analysts say about Apple"), times=1)


async def test_shallow_evidence_keeps_research_going_though_the_gap_detector_says_complete(fake_openai):
    script_analysis(fake_openai, ANALYSTS)
    script_one_reuters_source(fake_openai)
    script_gaps(fake_openai, gaps(9, complete=True), gaps(9.5, complete=True))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1][2][3].")

    events = await run(QUESTION, mode="research")

    first, second = of_type(events, "round")
    # round 1: complete by the detector's verdict, but one source from one domain: shallow, below 0.75
    assert (first.complete, first.shallow, first.stop_reason, first.new_sources) == (True, True, None, 1)
    assert first.confidence == 0.619  # coverage 1, credibility 0.8, diversity 0.125, evidence 0, consistency 1
    assert first.weak_areas == [
        "q1: backed by one source (reuters.com)",
        "only 1 distinct source",
        "every web source is from reuters.com",
    ]
    assert first.follow_ups == [CONFIRMATION]
    # the follow-up joined the plan, and its search asked for independent sources
    assert [q.question for q in of_type(events, "plan")[-1].sub_questions] == [ANALYSTS.question, CONFIRMATION]
    [confirmation] = requests_of(fake_openai, searched("Confirm or correct"))
    assert "independent of reuters.com" in confirmation.input_text
    # round 2: three publishers back the claim; research stops, the detector and the evidence agreeing
    assert (second.complete, second.shallow, second.stop_reason, second.new_sources) == (True, False, "complete", 2)
    assert second.confidence >= 0.75 and second.weak_areas == []
    summary = summary_of(events)
    assert [(e.n, e.goes_on_because, e.stop_reason) for e in summary.trace] == [(1, "shallow", None), (2, None, "complete")]
    assert summary.trace[0].plan_changes == [
        PlanChange(id="q2", question=CONFIRMATION, reason="weak_evidence", weak_area="q1: backed by one source (reuters.com)")
    ]
    assert summary.confidence.progression == [first.confidence, second.confidence]
    assert (summary.confidence.score, summary.confidence.refinements) == (second.confidence, 1)
    assert summary.confidence.summary == (
        f"2 research rounds; evidence confidence 0.62 → {second.confidence:.2f}; 1 follow-up added (1 for weak evidence)."
    )
    assert answer_text(events) == "Analysts rate Apple a buy [1][2][3]."  # trusted: no warning
    # the sources carry their publisher and, where the address gives it, the day published
    sources = of_type(events, "sources")[-1].sources
    assert [(s.url, s.domain_type) for s in sources] == [
        (REUTERS[0], "major_news"),
        (CORROBORATING[1][0], "major_news"),
        (CORROBORATING[2][0], "regulator"),
    ]


async def test_confidence_below_the_threshold_keeps_research_going_though_the_evidence_is_not_shallow(
    fake_openai, research_env
):
    research_env(RESEARCH_MAX_ITERATIONS="2")
    topics = {"guidance": "https://www.ft.com/apple-guidance", "buybacks": "https://www.cnbc.com/apple-buybacks"}
    script_analysis(fake_openai, ANALYSTS, *(sub(f"What did Apple say about {topic}?") for topic in topics))
    first = TextReply([Sentence("Most analysts rate Apple a buy.", cites=[REUTERS])])
    fake_openai.script(first, when=searched(ANALYSTS.question), times=1)
    for topic, url in topics.items():
        reply = TextReply([Sentence(f"Apple spoke of {topic}.", cites=[(url, topic)])])
        fake_openai.script(reply, when=searched(f"about {topic}?"), times=1)
    script_well_sourced_searches(fake_openai)  # what the follow-ups find
    script_gaps(fake_openai, gaps(9, complete=True), gaps(9, complete=True))

    events = await run(QUESTION, mode="research")

    first, second = of_type(events, "round")
    # three publishers, one claim each: not shallow, but no claim has a second source
    assert (first.shallow, first.confidence) == (False, 0.731)  # 0.25 + 0.25 x 0.8 + 0.15 x 0.875 + 0 + 0.15
    assert len(first.follow_ups) == 3 and all("Confirm or correct" in question for question in first.follow_ups)
    assert summary_of(events).trace[0].goes_on_because == "below_threshold"
    assert (second.stop_reason, second.confidence >= 0.75) == ("complete", True)


async def test_trusted_evidence_lets_research_stop_when_the_gap_detector_says_complete(fake_openai):
    script_analysis(fake_openai, ANALYSTS)
    script_well_sourced_searches(fake_openai)
    script_gaps(fake_openai, gaps(9, complete=True))

    events = await run(QUESTION, mode="research")

    [round_event] = of_type(events, "round")
    assert (round_event.stop_reason, round_event.shallow, round_event.weak_areas) == ("complete", False, [])
    assert len(requests_of(fake_openai, searched("analysts say about Apple"))) == 1
    summary = summary_of(events)
    assert summary.trace[0].plan_changes == [] and summary.trace[0].goes_on_because is None
    assert "Note:" not in summary.answer


async def test_evidence_still_shallow_after_the_last_round_ends_with_a_low_confidence_note(fake_openai, research_env):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, ANALYSTS)
    script_one_reuters_source(fake_openai)
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1].")

    events = await run(QUESTION, mode="research")

    note = (
        "\n\nNote: low confidence in the evidence behind this answer (0.62, below 0.75; shallow evidence). "
        "1 research round; evidence confidence 0.62. Still uncertain: q1: backed by one source (reuters.com); "
        "only 1 distinct source; every web source is from reuters.com. Check the sources before relying on it."
    )
    deltas = of_type(events, "delta")
    assert deltas[-1].text == note  # the last text, after the answer, before the sources
    assert events.index(deltas[-1]) < events.index(of_type(events, "sources")[-1])
    summary = summary_of(events)
    assert summary.answer == "Analysts rate Apple a buy [1]." + note
    assert summary.rounds[-1]["stop_reason"] == summary.trace[-1].stop_reason == "max_iterations"
    assert summary.confidence.shallow and summary.confidence.score < summary.confidence.threshold == 0.75
    assert summary.confidence.uncertain == summary.trace[-1].weak_areas


async def test_research_stops_when_neither_the_detector_nor_the_evidence_improves(fake_openai):
    script_analysis(fake_openai, ANALYSTS)
    # the follow-up finds nothing new: the same Reuters page again
    script_one_reuters_source(fake_openai, confirmed_by=[REUTERS])
    script_gaps(fake_openai, gaps(9, complete=True), gaps(9, complete=True))
    script_synthesis(fake_openai, "Analysts rate Apple a buy [1].")

    events = await run(QUESTION, mode="research")

    assert [(r.n, r.stop_reason, r.new_sources) for r in of_type(events, "round")] == [(1, None, 1), (2, "no_improvement", 0)]
    assert [entry.confidence.score for entry in summary_of(events).trace] == [0.619, 0.619]
    assert "Note: low confidence" in answer_text(events)


async def test_the_token_budget_still_ends_research_that_shallow_evidence_would_continue(fake_openai, research_env):
    research_env(RESEARCH_MAX_TOKENS_PER_RUN="1000")  # spent once the gap detector has answered
    analysis = QueryAnalysis(needs_decomposition=True, sub_questions=[ANALYSTS])
    fake_openai.script(JsonReply(analysis, usage=Usage(100, 100)), when=is_analysis)
    fake_openai.script(
        TextReply([Sentence("Most analysts rate Apple a buy.", cites=[REUTERS])], usage=Usage(300, 200)),
        when=searched("analysts say about Apple"),
    )
    fake_openai.script(JsonReply(gaps(9, complete=True), usage=Usage(200, 100)), when=is_gap_report)

    events = await run(QUESTION, mode="research")

    [round_event] = of_type(events, "round")
    assert round_event.shallow and (round_event.stop_reason, round_event.follow_ups) == ("token_budget", [])
    assert requests_of(fake_openai, searched("Confirm or correct")) == []
    assert summary_of(events).trace[-1].goes_on_because is None


# --- contradictions ---------------------------------------------------------------------------------------

REVENUE_REUTERS = sub("What revenue did Apple report for fiscal Q2 2025, per Reuters?")
REVENUE_CNBC = sub("What revenue did Apple report for fiscal Q2 2025, per CNBC?")
DISAGREEMENT = Contradiction(
    claim_a="Revenue was $95.4 billion", finding_a="q1", claim_b="Revenue was $94.9 billion", finding_b="q2", severity=0.8
)


async def test_contradictions_are_validated_carried_by_the_round_and_presented_to_the_synthesizer(fake_openai):
    script_analysis(fake_openai, REVENUE_REUTERS, REVENUE_CNBC)
    script_well_sourced_searches(fake_openai, "Apple reported revenue for the quarter.")
    unknown = Contradiction(claim_a="x", finding_a="q1", claim_b="y", finding_b="q9", severity=1)
    report = GapReport(complete=True, score=9, contradictions=[DISAGREEMENT, unknown, DISAGREEMENT])
    fake_openai.script(JsonReply(report), when=is_gap_report)
    script_synthesis(fake_openai, "Reuters reports $95.4 billion [1], CNBC $94.9 billion [2].")

    events = await run("How much revenue did Apple report last quarter?", mode="research")

    # the detector was asked for contradictions, with the finding ids as it sees them
    [gap_request] = requests_of(fake_openai, is_gap_report)
    assert "contradictions" in json.dumps(gap_request.text_format["schema"])
    assert "### q1 (qualitative, via web_search)" in gap_request.input_text
    # one contradiction left: q9 names no finding, and the repeat is dropped
    [round_event] = of_type(events, "round")
    assert round_event.contradictions == [DISAGREEMENT]
    assert round_event.payload()["contradictions"] == [
        {
            "claim_a": "Revenue was $95.4 billion",
            "finding_a": "q1",
            "claim_b": "Revenue was $94.9 billion",
            "finding_b": "q2",
            "severity": 0.8,
        }
    ]
    summary = summary_of(events)
    assert summary.trace[0].contradictions == [DISAGREEMENT]
    assert summary.confidence.consistency == 0.6  # 1 - 0.8 / 2
    assert "q1 and q2 disagree: Revenue was $95.4 billion / Revenue was $94.9 billion" in summary.confidence.uncertain
    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "### Contradictions" in synthesis.input_text
    listed = '- q1: "Revenue was $95.4 billion" versus q2: "Revenue was $94.9 billion" (severity 0.8 of 1)'
    assert listed in synthesis.input_text
    assert "Never pick one side silently" in synthesis.body["instructions"]


async def test_without_contradictions_the_synthesizer_prompt_has_no_such_section(fake_openai):
    script_analysis(fake_openai, ANALYSTS)
    script_well_sourced_searches(fake_openai)
    script_gaps(fake_openai, gaps(9, complete=True))

    await run(QUESTION, mode="research")

    [synthesis] = requests_of(fake_openai, is_synthesis)
    assert "### Contradictions" not in synthesis.input_text


# --- checkpoints -----------------------------------------------------------------------------------------


async def test_a_run_resumed_after_its_first_round_keeps_the_trace_and_counts_new_sources_from_there(fake_openai):
    script_analysis(fake_openai, ANALYSTS)
    script_one_reuters_source(fake_openai)
    script_gaps(fake_openai, gaps(9, complete=True), gaps(9.5, complete=True))
    whole = await run(QUESTION, mode="research")
    after_round_1 = next(e.state for e in of_type(whole, "checkpoint") if len(e.state["rounds"]) == 1)
    assert after_round_1["next_steps"][0]["about"] == "q1"
    # another attempt goes on from there: the confirmation, the detector, the answer
    script_one_reuters_source(fake_openai)
    script_gaps(fake_openai, gaps(9.5, complete=True))

    query = ResearchQuery(question=QUESTION, mode="research")
    resumed = [event async for event in run_research(query, resume_from=after_round_1)]

    assert requests_of(fake_openai, is_analysis)[1:] == []  # nothing of round 1 asked again
    [round_event] = of_type(resumed, "round")
    assert (round_event.n, round_event.new_sources, round_event.stop_reason) == (2, 2, "complete")
    assert summary_of(resumed).trace == summary_of(whole).trace
    assert summary_of(resumed).confidence == summary_of(whole).confidence


# --- the quick path ------------------------------------------------------------------------------------------


async def test_quick_answer_sources_carry_their_publisher_but_the_run_has_no_confidence(fake_openai):
    filing = ("https://www.sec.gov/Archives/edgar/data/320193/aapl-20250329.htm", "Apple 10-Q")
    news = ("https://www.reuters.com/technology/apple-results-2025-05-01/", "Apple results - Reuters")
    fake_openai.script(TextReply([Sentence("Revenue was $95.4 billion.", cites=[filing, news])]))

    events = await run("How did Apple do last quarter?", mode="quick")

    sources = of_type(events, "sources")[-1].sources
    assert [s.model_dump(mode="json") for s in sources] == [
        {"n": 1, "title": "Apple 10-Q", "url": filing[0], "kind": "web", "domain_type": "regulator"},
        {"n": 2, "title": news[1], "url": news[0], "kind": "web", "published": "2025-05-01", "domain_type": "major_news"},
    ]
    summary = summary_of(events)
    assert (summary.confidence, summary.trace) == (None, [])
    assert summary.answer.startswith("Revenue was $95.4 billion.") and "Note:" not in summary.answer
