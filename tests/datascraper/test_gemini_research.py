"""A whole research run on Gemini alone: RESEARCH_PLANNER_MODEL and RESEARCH_MODEL are `google:` models,
SEARCH_PROVIDER is `hosted` (Gemini's Google Search tool) and no OpenAI key is set. The real pipeline, the
real google-genai SDK against the fake Gemini API, the cited pages behind grounding redirects on a local
page server, so the citation check fetches them as it would Google's redirects."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datascraper.plan_schemas import GapReport, QueryAnalysis
from datascraper.schemas import Source
from tests.datascraper.research_support import answer_text, of_type, run, steps, sub, summary_of
from tests.fakes.gemini_fixtures import PLANNER, RESEARCHER, fake_gemini  # noqa: F401 (a fixture)
from tests.fakes.gemini_server import FakeGemini, searches, wants_schema, writes_without_search
from tests.fakes.gemini_wire import Cited, GeminiJson, GeminiText, grounding_redirect
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.page_server import FakePageServer, article

QUESTION = "What revenue did Apple report for fiscal 2024, and how did its services do?"


@pytest.fixture
def openai_watch(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI API where OPENAI_BASE_URL points, to see that nothing is sent there."""
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def publish(pages: FakePageServer, path: str, title: str, text: str) -> str:
    """An article on the page server, and the grounding redirect that leads to it."""
    return grounding_redirect(pages, pages.add(path, article(title, text)))


def script_gemini_research(gemini: FakeGemini, pages: FakePageServer) -> tuple[str, str, str]:
    """Two web sub-questions, each answered from two credible publishers behind grounding redirects, a
    complete gap report, and the answer citing three pages; the three redirects."""
    revenue = publish(
        pages, "/apple-results", "Apple results", "Apple reported revenue of $391.04 billion for fiscal 2024."
    )
    filing = publish(
        pages,
        "/apple-10k",
        "Apple 10-K",
        "Apple reported revenue of $391.04 billion for fiscal 2024 in its annual report.",
    )
    services = publish(
        pages,
        "/apple-services",
        "Apple services",
        "Apple's services revenue grew 13% to a record $96.17 billion.",
    )
    gemini.script(
        GeminiJson(
            QueryAnalysis(
                needs_decomposition=True, sub_questions=[sub("Apple fiscal 2024 revenue"), sub("Apple services growth")]
            )
        ),
        when=wants_schema("QueryAnalysis"),
    )
    gemini.script(
        GeminiText(
            (
                Cited(
                    "Apple reported revenue of $391.04 billion for fiscal 2024.",
                    ((revenue, "reuters.com"), (filing, "sec.gov")),
                ),
            )
        ),
        when=lambda request: searches(request) and "fiscal 2024 revenue" in request.text,
    )
    gemini.script(
        GeminiText(
            (
                Cited(
                    "Apple's services revenue grew 13% to a record $96.17 billion.",
                    ((services, "ft.com"), (revenue, "reuters.com")),
                ),
            )
        ),
        when=lambda request: searches(request) and "services growth" in request.text,
    )
    # Each answer is backed by two credible publishers: the gap detector (Gemini too) ends research at once.
    gemini.script(
        GeminiJson(GapReport(complete=True, score=9, gaps=[], follow_up_queries=[])), when=wants_schema("GapReport")
    )
    gemini.script(
        GeminiText(
            (
                "Apple reported revenue of $391.04 billion for fiscal 2024 [1][2].",
                "Its services revenue grew 13% to a record $96.17 billion [3].",
            )
        ),
        when=writes_without_search,
    )

    return revenue, filing, services


async def test_a_research_question_ends_done_on_gemini_alone_with_cited_checked_sources(
    fake_gemini: FakeGemini, openai_watch, verifying, page_server
):
    verifying(SEARCH_PROVIDER="hosted", RESEARCH_MAX_ITERATIONS="2")
    revenue, filing, services = script_gemini_research(fake_gemini, page_server)

    events = await run(QUESTION, mode="research")

    summary = summary_of(events)
    assert sorted(steps(events)) == [
        ("q1", "done", "web_search"),
        ("q1", "started", "web_search"),
        ("q2", "done", "web_search"),
        ("q2", "started", "web_search"),
    ]
    assert answer_text(events).startswith("Apple reported revenue of $391.04 billion for fiscal 2024 [1][2].")
    # The grounding redirects are the sources' addresses; the publishers are the domains their titles name.
    [sources] = of_type(events, "sources")
    assert sources.sources == [
        Source(n=1, title="reuters.com", url=revenue, kind="web", site="reuters.com", domain_type="major_news"),
        Source(n=2, title="sec.gov", url=filing, kind="web", site="sec.gov", domain_type="regulator"),
        Source(n=3, title="ft.com", url=services, kind="web", site="ft.com", domain_type="major_news"),
    ]
    assert summary.signals["distinct_domains"] == 3 and len(summary.rounds) == 1
    # Each cited redirect was followed to its article, whose text supports the sentence that cites it.
    [verification] = of_type(events, "verification")
    assert [(check.n, check.status) for check in verification.citations] == [
        (1, "supported"),
        (2, "supported"),
        (3, "supported"),
    ]
    assert page_server.hits["/apple-results"] == 1 and page_server.hits["/apple-services"] == 1
    # Every call went to Gemini, counted under its label; nothing went to OpenAI.
    assert openai_watch.requests == []
    assert set(summary.usage.by_model) == {PLANNER, RESEARCHER}
    assert summary.usage.by_model[RESEARCHER].web_search_calls == 2
    assert [request.model for request in fake_gemini.requests].count("gemini-2.5-flash") == 3  # 2 searches, the answer
