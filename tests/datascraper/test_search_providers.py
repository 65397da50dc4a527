"""SEARCH_PROVIDER: a web sub-question searched through a search API (SearxNG), its pages read by the
citation fetcher, its finding written by the research model from them, and their text checking the answer's
citations. The real pipeline against the fake OpenAI server, a fake SearxNG at its wire and pages on a local
server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest

from datascraper.errors import (
    SearchFormatRefused,
    SearchNotConfigured,
    SearchRateLimited,
    SearchUnavailable,
)
from datascraper.schemas import Source
from datascraper.search.searxng import SearxngSearch
from tests.datascraper.research_support import (
    is_synthesis,
    of_type,
    requests_of,
    run,
    run_until_error,
    script_analysis,
    script_synthesis,
    steps,
    sub,
    summary_of,
)
from tests.fakes.openai_server import RecordedRequest, TextReply
from tests.fakes.page_server import FakePageServer, article
from tests.fakes.searxng_server import FakeSearxng, searx_result

QUESTION = "What revenue did Apple report for fiscal 2024?"


@pytest.fixture
def searx() -> Iterator[FakeSearxng]:
    with FakeSearxng() as server:
        yield server


@pytest.fixture
def searching(verifying, searx: FakeSearxng):
    """SEARCH_PROVIDER=searxng on the fake instance, one research round, pages on 127.0.0.1 readable."""
    verifying(SEARCH_PROVIDER="searxng", SEARXNG_URL=searx.url, RESEARCH_MAX_ITERATIONS="1")
    return verifying


def writes_from_passages(request: RecordedRequest) -> bool:
    return "Passages:" in request.input_text


def publish_apple_pages(searx: FakeSearxng, pages: FakePageServer) -> str:
    """Three results: an article, a page that is gone, another article; the first one's URL."""
    results = pages.add(
        "/apple-results",
        article("Apple results", "Apple reported revenue of $391.04 billion for fiscal 2024, up 2% on a year earlier."),
    )
    outlook = pages.add("/apple-outlook", article("Apple outlook", "Analysts expect services to keep growing."))
    searx.results = [
        searx_result(results, "Apple results - Example News", "Apple reported revenue...", "2025-06-12T00:00:00"),
        searx_result(pages.url("/gone"), "A page that is gone"),  # 404: not a passage
        searx_result(outlook, "Apple outlook - Example News", engine="brave"),
    ]
    return results


async def test_a_sub_question_is_written_from_the_pages_searxng_found_and_checked_against_them(
    fake_openai, searching, searx, page_server
):
    results = publish_apple_pages(searx, page_server)
    script_analysis(fake_openai, sub(QUESTION))
    fake_openai.script(
        TextReply(["Apple reported revenue of $391.04 billion for fiscal 2024 [1]."]), when=writes_from_passages
    )
    script_synthesis(fake_openai, "Apple's fiscal 2024 revenue was $391.04 billion [1].")

    events = await run(QUESTION, mode="research")

    assert steps(events) == [("q1", "started", "web_search"), ("q1", "done", "web_search")]
    assert searx.queries == [{"q": [QUESTION], "format": ["json"]}]
    assert not any(request.has_web_search for request in fake_openai.requests)
    [writing] = requests_of(fake_openai, writes_from_passages)
    assert writing.tool_types == []
    assert "[1] Apple results - Example News" in writing.input_text and "$391.04 billion" in writing.input_text
    assert "[2] Apple outlook - Example News" in writing.input_text
    assert "A page that is gone" not in writing.input_text
    [sources] = of_type(events, "sources")
    assert sources.sources == [
        Source(
            n=1,
            title="Apple results - Example News",
            url=results,
            kind="web",
            published=date(2025, 6, 12),
            domain_type="other",
        )
    ]
    [verification] = of_type(events, "verification")
    assert [(check.n, check.status) for check in verification.citations] == [(1, "supported")]
    # Each page was read once, for the writing: the check used that text.
    assert page_server.hits == {"/apple-results": 1, "/apple-outlook": 1, "/gone": 1}
    assert summary_of(events).answer.startswith("Apple's fiscal 2024 revenue was $391.04 billion [1].")
    assert len(requests_of(fake_openai, is_synthesis)) == 2  # the passages' writing, then the answer


async def test_a_quick_answer_is_written_from_the_pages_searxng_found_and_checked_against_them(
    fake_openai, searching, searx, page_server
):
    results = publish_apple_pages(searx, page_server)
    fake_openai.script(
        TextReply(["Apple reported revenue of $391.04 billion for fiscal 2024 [1]."]), when=writes_from_passages
    )

    events = await run(QUESTION, mode="quick")

    assert searx.queries == [{"q": [QUESTION], "format": ["json"]}]
    [writing] = fake_openai.requests
    assert writing.tool_types == [] and "$391.04 billion" in writing.input_text
    assert "numbered passages" in writing.instructions
    [sources] = of_type(events, "sources")
    assert [(source.n, source.url, source.published) for source in sources.sources] == [(1, results, date(2025, 6, 12))]
    [verification] = of_type(events, "verification")
    assert [(check.n, check.status) for check in verification.citations] == [(1, "supported")]
    assert page_server.hits["/apple-results"] == 1
    summary = summary_of(events)
    assert summary.answer == "Apple reported revenue of $391.04 billion for fiscal 2024 [1]."
    assert summary.usage.search_calls == {"searxng": 1}  # the quick answer's one search, counted


async def test_a_search_whose_pages_cannot_be_read_fails_its_sub_question(fake_openai, searching, searx, page_server):
    searx.results = [searx_result(page_server.url("/gone"), "A page that is gone")]
    script_analysis(fake_openai, sub(QUESTION))

    events = await run(QUESTION, mode="research")

    assert steps(events)[-1] == ("q1", "failed", "web_search")
    [finding] = of_type(events, "checkpoint")[-1].state["findings"]
    assert (finding["status"], finding["error"]) == ("failed", "upstream_error")
    assert requests_of(fake_openai, writes_from_passages) == []


async def test_an_instance_without_the_json_format_ends_the_run_naming_the_setting_to_change(
    fake_openai, searching, searx
):
    searx.formats = ("html",)
    script_analysis(fake_openai, sub(QUESTION))

    _, error = await run_until_error(QUESTION, mode="research")

    assert isinstance(error, SearchFormatRefused)
    assert error.code == "provider_not_configured"
    assert "search.formats" in error.message and "json" in error.message
    assert len(searx.queries) == 1  # refused, not retried


async def test_a_rate_limited_search_is_retried_then_named(searx):
    searx.rate_limited = 5
    search = SearxngSearch(searx.url, max_retries=1)

    with pytest.raises(SearchRateLimited) as raised:
        await search.search(QUESTION, limit=5, timeout_s=10)

    assert raised.value.code == "rate_limited"
    assert len(searx.queries) == 2


async def test_a_search_rate_limited_once_answers_on_its_retry(searx, page_server):
    searx.rate_limited = 1
    searx.results = [searx_result(page_server.url("/a"), "A", published="2025-06-12T09:30:00+00:00")]

    found = await SearxngSearch(searx.url, max_retries=2).search(QUESTION, limit=5, timeout_s=10)

    assert [(result.url, result.published, result.engine) for result in found] == [
        (page_server.url("/a"), date(2025, 6, 12), "duckduckgo")
    ]
    assert len(searx.queries) == 2


async def test_results_without_an_address_are_skipped_and_the_limit_holds(searx):
    searx.results = [
        {"title": "An answer box", "content": "42"},
        *(searx_result(f"https://example.com/{i}", f"Result {i}", published="not a date") for i in range(8)),
    ]

    found = await SearxngSearch(searx.url, max_retries=0).search(QUESTION, limit=3, timeout_s=10)

    assert [result.title for result in found] == ["Result 0", "Result 1", "Result 2"]
    assert all(result.published is None for result in found)


async def test_an_unreachable_instance_is_named(searx):
    url = searx.url
    searx.stop()

    with pytest.raises(SearchUnavailable) as raised:
        await SearxngSearch(url, max_retries=0).search(QUESTION, limit=5, timeout_s=5)

    assert raised.value.code == "upstream_error"
    assert "SEARXNG_URL" in raised.value.message


@pytest.mark.parametrize("root", [None, "not a url", "ftp://search.example"])
def test_a_missing_or_malformed_searxng_url_is_named_before_anything_is_sent(root):
    with pytest.raises(SearchNotConfigured) as raised:
        SearxngSearch(root, max_retries=0).ensure_configured()
    assert raised.value.code == "provider_not_configured" and "SEARXNG_URL" in raised.value.message
