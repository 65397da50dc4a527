"""Verification inside a run: after the answer's last delta, one `verification` event, the run's summary
and signals filled; off with CITATION_VERIFY=0; never failing the run. The real pipeline against the fake
OpenAI server, cited pages on a local server, market data over the fake yfinance."""

from __future__ import annotations

import logging
import time

import pytest

from datascraper.research_engine import pipeline, run_research
from datascraper.research_engine.trace import checked_confidence, low_confidence_note
from datascraper.schemas import CitationCheck, ResearchQuery
from datascraper.trace_schemas import RunConfidence
from tests.datascraper.conftest import market_data  # noqa: F401  (the fixture)
from tests.datascraper.research_support import (
    gaps,
    of_type,
    run,
    script_analysis,
    script_gaps,
    script_synthesis,
    sub,
    summary_of,
)
from tests.fakes.openai_server import Sentence, TextReply
from tests.fakes.page_server import FakePageServer, article


def script_cited_answer(fake_openai, page_server: FakePageServer) -> None:
    results = page_server.add(
        "/apple-results",
        article("Apple results", "Apple reported revenue of $391.04 billion for fiscal 2024, up 2% on a year earlier."),
    )
    cite = [(results, "Apple results - Example News")]
    fake_openai.script(
        TextReply(
            [
                Sentence("Apple's revenue was $391.04 billion in fiscal 2024.", cites=cite),
                Sentence("Apple also sold 3 million electric cars.", cites=cite),
                Sentence("Guidance is due in July.", cites=[(page_server.url("/gone"), "Guidance - Example")]),
            ],
            chunk_chars=12,
        )
    )


async def test_citations_are_checked_after_the_last_delta_and_reported_once(fake_openai, verifying, page_server):
    script_cited_answer(fake_openai, page_server)
    events, last_delta_at = [], 0.0
    async for event in run_research(ResearchQuery(question="How did Apple do last year?", mode="quick")):
        if event.type == "delta":
            last_delta_at = time.monotonic()
        events.append(event)

    types = [event.type for event in events]
    assert types[-3:] == ["sources", "verification", "summary"]
    assert types.count("verification") == 1
    assert page_server.first_hit_at is not None and page_server.first_hit_at > last_delta_at
    [verification] = of_type(events, "verification")
    assert [(c.marker_index, c.n, c.status) for c in verification.citations] == [
        (0, 1, "supported"),
        (1, 1, "unsupported"),
        (2, 2, "unreachable"),
    ]
    assert "$391.04 billion" in verification.citations[0].evidence
    assert verification.payload()["citations"][1] == {"n": 1, "marker_index": 1, "status": "unsupported"}
    assert page_server.hits == {"/apple-results": 1, "/gone": 1}
    summary = summary_of(events)
    assert summary.verification == verification.citations
    signal = summary.signals["verification"]
    assert (signal["supported"], signal["unsupported"], signal["unreachable"], signal["pages"]) == (1, 1, 1, 2)
    assert signal["unreachable_reasons"] == {"http_404": 1}
    assert "verifying_ms" in summary.timings


async def test_with_citation_verify_0_nothing_is_fetched_and_no_event_is_sent(fake_openai, verifying, page_server):
    verifying(CITATION_VERIFY="0")
    script_cited_answer(fake_openai, page_server)

    events = await run("How did Apple do last year?", mode="quick")

    assert [event.type for event in events][-2:] == ["sources", "summary"]
    assert of_type(events, "verification") == []
    summary = summary_of(events)
    assert summary.verification == [] and summary.signals["verification"] is None
    assert page_server.first_hit_at is None


async def test_a_failing_verifier_leaves_the_answer_standing_unverified(
    fake_openai, verifying, page_server, monkeypatch, caplog
):
    async def broken(*args, **kwargs):
        raise RuntimeError("a bug in the verifier")

    monkeypatch.setattr(pipeline, "verify_citations", broken)
    script_cited_answer(fake_openai, page_server)

    with caplog.at_level(logging.ERROR, logger="datascraper.research_engine.pipeline"):
        events = await run("How did Apple do last year?", mode="quick")

    assert [event.type for event in events][-2:] == ["sources", "summary"]
    summary = summary_of(events)
    assert summary.answer.startswith("Apple's revenue was $391.04 billion")
    assert summary.verification == [] and summary.signals["verification"] is None
    assert "Citation verification failed" in caplog.text


async def test_what_the_deadline_leaves_unchecked_is_unreachable(fake_openai, verifying, page_server):
    verifying(CITATION_VERIFY_TIMEOUT="0.3")
    slow = page_server.add("/slow", article("Slow", "Revenue was $5.5 billion."), delay_s=6)
    fake_openai.script(TextReply([Sentence("Revenue was $5.5 billion.", cites=[(slow, "Slow")])]))

    started = time.monotonic()
    events = await run("Revenue?", mode="quick")

    assert time.monotonic() - started < 5  # not the page's 6 s
    assert [c.status for c in of_type(events, "verification")[0].citations] == ["unreachable"]
    assert summary_of(events).signals["verification"]["unreachable_reasons"] == {"deadline": 1}


async def test_market_data_citations_are_checked_against_the_payloads_and_facts_of_that_source(
    fake_openai, verifying, page_server, market_data, research_env  # noqa: F811
):
    research_env(RESEARCH_MAX_ITERATIONS="1")
    script_analysis(fake_openai, sub("What was Apple's annual revenue?", "numerical", ["AAPL"], "income_statement"))
    script_gaps(fake_openai, gaps(9, complete=True))
    script_synthesis(
        fake_openai,
        "Apple's revenue was $391.04 billion in fiscal 2024 [1]. It grew 2.0% [1]. Some expected 12.3% [1].",
    )

    events = await run("How much revenue did Apple make?", mode="research")

    [verification] = of_type(events, "verification")
    assert [(c.n, c.status) for c in verification.citations] == [(1, "supported"), (1, "supported"), (1, "unsupported")]
    assert verification.citations[0].evidence == "AAPL TotalRevenue 2024-09-28 = 391,035,000,000"
    assert verification.citations[1].evidence.startswith("F1 AAPL Total Revenue growth")
    assert summary_of(events).signals["verification"]["pages"] == 0
    assert page_server.first_hit_at is None


async def test_a_fast_path_quote_is_checked_against_the_quote_it_came_from(
    fake_openai, verifying, market_data  # noqa: F811
):
    events = await run("What is AAPL trading at?")

    [verification] = of_type(events, "verification")
    assert [(c.n, c.status) for c in verification.citations] == [(1, "supported")]
    assert "price = 196.45" in verification.citations[0].evidence


def script_services_research(fake_openai, page_server: FakePageServer, *synthesis: str) -> None:
    """A research run whose one web finding cites a page saying services grew 12%; `synthesis` is its answer."""
    services = page_server.add(
        "/apple-services", article("Apple services", "Apple's services revenue grew 12% on a year earlier.")
    )
    script_analysis(fake_openai, sub("How fast did Apple's services revenue grow?"))
    script_gaps(fake_openai, gaps(9, complete=True))
    fake_openai.script(
        TextReply([Sentence("Apple's services revenue grew 12%.", cites=[(services, "Apple services - Example")])]),
        when=lambda request: request.has_web_search,
    )
    script_synthesis(fake_openai, *synthesis)


async def test_unsupported_citations_lower_the_confidence_the_run_stores(fake_openai, verifying, page_server):
    script_services_research(
        fake_openai,
        page_server,
        "Apple's services revenue grew 12% [1].",
        "Apple also sold 3 million electric cars [1].",
        "It plans a base on the Moon [1].",
    )

    summary = summary_of(await run("How is Apple's services business doing?", mode="research"))

    confidence = summary.confidence
    assert [c.status for c in summary.verification] == ["supported", "unsupported", "unsupported"]
    assert confidence.citation_support == pytest.approx(1 / 3, abs=0.001)
    assert confidence.evidence_score is not None
    assert confidence.score == pytest.approx(confidence.evidence_score * (1 - 0.5 * 2 / 3), abs=0.001)
    assert "2 of 3 citations not supported" in confidence.summary
    assert summary.signals["confidence"] == confidence.score


async def test_supported_citations_leave_the_confidence_as_the_research_judged_it(fake_openai, verifying, page_server):
    script_services_research(fake_openai, page_server, "Apple's services revenue grew 12% [1].")

    summary = summary_of(await run("How is Apple's services business doing?", mode="research"))

    assert summary.confidence.citation_support == 1.0
    assert summary.confidence.evidence_score is None
    assert summary.confidence.score == summary.trace[-1].confidence.score


async def test_citations_whose_pages_refuse_the_checker_leave_the_confidence_the_research_reached(
    fake_openai, verifying, page_server
):
    # Five paywalled pages (HTTP 403 to a fetcher), each cited once.
    pages = [page_server.add(f"/paywalled-{i}", article("Subscribe", "Subscribe to read."), status=403) for i in range(5)]
    script_analysis(fake_openai, sub("How fast did Apple's services revenue grow?"))
    script_gaps(fake_openai, gaps(9, complete=True))
    fake_openai.script(
        TextReply([Sentence(f"Finding {i}.", cites=[(url, f"Story {i} - Reuters")]) for i, url in enumerate(pages)]),
        when=lambda request: request.has_web_search,
    )
    script_synthesis(fake_openai, " ".join(f"Finding {i} [{i + 1}]." for i in range(5)))

    summary = summary_of(await run("How is Apple's services business doing?", mode="research"))

    assert [(c.status, c.reason) for c in summary.verification] == [("unreachable", "http_403")] * 5
    confidence = summary.confidence
    assert confidence.score == summary.trace[-1].confidence.score == summary.signals["confidence"]
    assert confidence.evidence_score is None, "not lowered"
    assert (confidence.citations_unchecked, confidence.unchecked_reasons) == (5, {"http_403": 5})
    assert "5 of 5 citations could not be checked, their source unreadable (5 HTTP 403)" in confidence.summary


# --- how the check moves the confidence: the run, evidence 0.975 citing five unreadable pages ------


def research_confidence(score: float) -> RunConfidence:
    return RunConfidence(
        score=score,
        coverage=1.0,
        credibility=0.95,
        diversity=1.0,
        evidence=1.0,
        consistency=0.9,
        shallow=False,
        threshold=0.75,
        rounds=1,
        progression=[score],
        refinements=0,
        uncertain=[],
        summary="1 research round; evidence confidence 0.97.",
    )


def unreachable(marker_index: int, reason: str) -> CitationCheck:
    return CitationCheck(n=marker_index + 1, marker_index=marker_index, status="unreachable", reason=reason)


FIVE_UNREADABLE = [unreachable(0, "http_403"), unreachable(1, "http_403"), unreachable(2, "http_401"),
                   unreachable(3, "timeout"), unreachable(4, "http_403")]  # fmt: skip


def test_five_unreadable_citations_leave_0_975_where_it_was_with_no_low_confidence_flag():
    confidence = checked_confidence(research_confidence(0.975), FIVE_UNREADABLE)

    assert confidence.score == 0.975 and confidence.evidence_score is None
    assert low_confidence_note(confidence) == ""
    assert confidence.citations_unchecked == 5
    assert confidence.unchecked_reasons == {"http_403": 3, "http_401": 1, "timeout": 1}
    assert confidence.citation_support is None, "none could be read"
    assert confidence.summary == (
        "1 research round; evidence confidence 0.97. 5 of 5 citations could not be checked, their source "
        "unreadable (3 HTTP 403, 1 HTTP 401, 1 timeout); they leave the confidence as it was."
    )


def test_an_unsupported_citation_lowers_the_confidence_by_its_own_share_whatever_could_not_be_checked():
    checks = [CitationCheck(n=1, marker_index=0, status="unsupported"), *FIVE_UNREADABLE[1:]]

    confidence = checked_confidence(research_confidence(0.975), checks)

    assert confidence.score == pytest.approx(0.975 * (1 - 0.5 * 1 / 5), abs=0.001)
    assert confidence.evidence_score == 0.975
    assert (confidence.citation_support, confidence.citations_unchecked) == (0.0, 4)
    assert "found 1 of 5 citations not supported by their source" in confidence.summary
    assert "4 of 5 citations could not be checked" in confidence.summary


def test_with_every_citation_read_an_unsupported_one_lowers_the_confidence_as_before():
    checks = [
        CitationCheck(n=1, marker_index=0, status="supported"),
        CitationCheck(n=2, marker_index=1, status="unsupported"),
    ]

    confidence = checked_confidence(research_confidence(0.975), checks)

    assert confidence.score == 0.731  # 0.975 x (1 - 0.5 x 1/2)
    assert (confidence.citation_support, confidence.citations_unchecked, confidence.unchecked_reasons) == (0.5, 0, {})
    assert "could not be checked" not in confidence.summary
    assert low_confidence_note(confidence) != ""
